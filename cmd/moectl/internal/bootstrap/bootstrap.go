// Package bootstrap holds the compiled bootstrap: the JSON that `moectl compile` prints and
// moe-host parses (cgo/host/bootstrap.h). Its shape is the contract documented in
// cgo/host/compiled-bootstrap.md; change both together.
//
// Conventions from that contract: durations are milliseconds, byte strings (serialized Any,
// secret values) are standard base64 strings, and every key is present (empty lists and maps
// are [] and {}, never null) unless the field is a pointer with omitempty.
package bootstrap

import "encoding/json"

// Bootstrap is the whole compiled file.
type Bootstrap struct {
	Admin     *SocketAddress `json:"admin,omitempty"`
	Listeners []Listener     `json:"listeners"`
	Clusters  []Cluster      `json:"clusters"`
	// DynamicResources are the files LDS and CDS read (dynamic_resources with
	// path_config_source); absent when the bootstrap has none.
	DynamicResources *DynamicResources `json:"dynamic_resources,omitempty"`
	// ConfigDump is what the admin /config_dump serves: an envoy.admin.v3.ConfigDump of the
	// bootstrap (sensitive fields redacted, as Envoy's config dump does).
	ConfigDump json.RawMessage `json:"config_dump,omitempty"`
}

// DynamicResources is dynamic_resources.lds_config / cds_config, each optional.
type DynamicResources struct {
	LDS *ConfigSource `json:"lds,omitempty"`
	CDS *ConfigSource `json:"cds,omitempty"`
}

// ConfigSource is a filesystem config source (path_config_source, or the deprecated path):
// the file holds a DiscoveryResponse; it is re-read when a file is moved onto Path, or, with
// WatchedDirectory, when a file is moved into that directory.
type ConfigSource struct {
	Path             string `json:"path"`
	WatchedDirectory string `json:"watched_directory"`
	// WatchModify (watched_directory.watch_modify): changes in place (IN_MODIFY) count too.
	WatchModify bool `json:"watch_modify"`
}

// RDS is an http connection manager's rds: the route table named RouteConfigName from the
// file of ConfigSource.
type RDS struct {
	RouteConfigName string       `json:"route_config_name"`
	ConfigSource    ConfigSource `json:"config_source"`
}

// Resources is what `moectl compile --lds/--cds/--rds FILE` prints: one DiscoveryResponse
// file compiled. Exactly one of the lists is present.
type Resources struct {
	VersionInfo  string               `json:"version_info"`
	Listeners    []Listener           `json:"listeners,omitempty"`
	Clusters     []Cluster            `json:"clusters,omitempty"`
	RouteConfigs []RouteConfiguration `json:"route_configs,omitempty"`
}

// SocketAddress is an IP (or, for STRICT_DNS endpoints, a host name) and a port.
type SocketAddress struct {
	Address string `json:"address"`
	Port    uint32 `json:"port"`
}

// Listener is one listener with its single HTTP connection manager.
type Listener struct {
	Name string `json:"name"`
	// Hash identifies the listener's proto (xDS resources only): an update with the same hash
	// changes nothing, as Envoy skips a listener whose config hash is unchanged.
	Hash                          string                `json:"hash,omitempty"`
	Address                       SocketAddress         `json:"address"`
	PerConnectionBufferLimitBytes uint32                `json:"per_connection_buffer_limit_bytes"`
	HCM                           HttpConnectionManager `json:"hcm"`
	// Dump (xDS resources only) is the listener as the admin /config_dump shows it: an Any as
	// compact JSON text, sensitive fields redacted. RouteConfigDump is its inline route_config
	// the same way (a static route config in the dump), "" when it uses RDS.
	Dump            string `json:"dump,omitempty"`
	RouteConfigDump string `json:"route_config_dump,omitempty"`
}

// HttpConnectionManager is the supported subset of envoy.filters.network.http_connection_manager.
type HttpConnectionManager struct {
	StatPrefix          string `json:"stat_prefix"`
	MaxRequestHeadersKB uint32 `json:"max_request_headers_kb"`
	RequestTimeoutMS    uint64 `json:"request_timeout_ms"`
	// RequestHeadersTimeoutMS is request_headers_timeout (0 = disabled, Envoy's default).
	RequestHeadersTimeoutMS uint64 `json:"request_headers_timeout_ms"`
	StreamIdleTimeoutMS     uint64 `json:"stream_idle_timeout_ms"`
	// FlushAccessLogOnNewRequest is access_log_options.flush_access_log_on_new_request: golang
	// filters get OnLogDownstreamStart when a request starts.
	FlushAccessLogOnNewRequest bool `json:"flush_access_log_on_new_request"`
	// AccessLogFlushIntervalMS is access_log_options.access_log_flush_interval: golang filters
	// get OnLogDownstreamPeriodic at this interval while a request is alive (0 = never).
	AccessLogFlushIntervalMS uint64 `json:"access_log_flush_interval_ms"`
	// NormalizePath, MergeSlashes, PathWithEscapedSlashesAction (KEEP_UNCHANGED,
	// REJECT_REQUEST, UNESCAPE_AND_REDIRECT, UNESCAPE_AND_FORWARD), StripPort (NONE,
	// MATCHING_HOST, ANY) and StripTrailingHostDot: the request-target normalisation done
	// before routing (moe-host's path_normalizer).
	NormalizePath                bool               `json:"normalize_path"`
	MergeSlashes                 bool               `json:"merge_slashes"`
	PathWithEscapedSlashesAction string             `json:"path_with_escaped_slashes_action"`
	StripPort                    string             `json:"strip_port"`
	StripTrailingHostDot         bool               `json:"strip_trailing_host_dot"`
	HTTPFilters                  []HTTPFilter       `json:"http_filters"`
	RouteConfig                  RouteConfiguration `json:"route_config"`
	// AccessLog is the connection manager's access_log list.
	AccessLog []AccessLog `json:"access_log"`
	// RDS, when set, replaces RouteConfig (which is then empty): the route table comes from a
	// file and changes without the listener changing.
	RDS *RDS `json:"rds,omitempty"`
	// UpgradeConfigs is upgrade_configs: the upgrade types (websocket, ...) this connection
	// manager lets through, each enabled or not; a route's list overrides it per type.
	UpgradeConfigs []UpgradeConfig `json:"upgrade_configs,omitempty"`
}

// UpgradeConfig is one upgrade_configs entry (connection manager or route). UpgradeType is
// lowercased: Envoy compares upgrade types case-insensitively.
type UpgradeConfig struct {
	UpgradeType string `json:"upgrade_type"`
	Enabled     bool   `json:"enabled"`
}

// Access logger types.
const (
	AccessLogFile   = "file"   // envoy.access_loggers.file
	AccessLogStdout = "stdout" // envoy.access_loggers.stdout
	AccessLogStderr = "stderr" // envoy.access_loggers.stderr
)

// AccessLog is one access logger: where it writes and its format.
type AccessLog struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Path is the file of a file logger (/dev/stdout is a file too, as in Envoy).
	Path   string `json:"path"`
	Format Format `json:"format"`
	// Filter decides whether a line is written (AccessLogFilter); nil logs every request.
	Filter *AccessLogFilter `json:"filter,omitempty"`
}

// Access log filter types (envoy.config.accesslog.v3.AccessLogFilter's filter_specifier).
const (
	LogFilterStatusCode     = "status_code"
	LogFilterDuration       = "duration"
	LogFilterNotHealthCheck = "not_health_check"
	LogFilterTraceable      = "traceable"
	LogFilterRuntime        = "runtime"
	LogFilterAnd            = "and"
	LogFilterOr             = "or"
	LogFilterHeader         = "header"
	LogFilterResponseFlag   = "response_flag"
	LogFilterGrpcStatus     = "grpc_status"
	LogFilterLogType        = "log_type"
)

// AccessLogFilter is one node of an access log filter tree. Which fields are set depends on
// Type: Op and Value (status_code, duration; ComparisonFilter with the runtime key's default,
// moe-host has no runtime), Filters (and, or), Header (header), Flags (response_flag: Envoy's
// short names, empty means any flag), Statuses and Exclude (grpc_status: numeric codes),
// Types and Exclude (log_type: AccessLogType names), Numerator, Denominator and
// IndependentRandomness (runtime: percent_sampled with its denominator as a number).
type AccessLogFilter struct {
	Type                  string            `json:"type"`
	Op                    string            `json:"op,omitempty"`
	Value                 uint32            `json:"value,omitempty"`
	Filters               []AccessLogFilter `json:"filters,omitempty"`
	Header                *HeaderMatcher    `json:"header,omitempty"`
	Flags                 []string          `json:"flags,omitempty"`
	Statuses              []uint32          `json:"statuses,omitempty"`
	Types                 []string          `json:"types,omitempty"`
	Exclude               bool              `json:"exclude,omitempty"`
	Numerator             uint32            `json:"numerator,omitempty"`
	Denominator           uint32            `json:"denominator,omitempty"`
	IndependentRandomness bool              `json:"independent_randomness,omitempty"`
}

// Format kinds.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// Format is a parsed substitution format (Envoy's SubstitutionFormatString): a text format is a
// list of tokens; a JSON format is a list of pieces, each either raw JSON or a template whose
// tokens make one value (a single command keeps its type; several make a string).
type Format struct {
	Kind            string            `json:"kind"`
	OmitEmptyValues bool              `json:"omit_empty_values"`
	Text            []FormatToken     `json:"text"`
	JSON            []FormatJSONPiece `json:"json"`
}

// FormatToken is a literal (Text) or a command operator: %COMMAND(args):MAX_LENGTH%, its
// subcommand already split the way the command reads it (see cgo/host/compiled-bootstrap.md).
type FormatToken struct {
	Text      string   `json:"text,omitempty"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	MaxLength *uint64  `json:"max_length,omitempty"`
}

// FormatJSONPiece is raw JSON text or a template.
type FormatJSONPiece struct {
	Raw      *string       `json:"raw,omitempty"`
	Template []FormatToken `json:"template,omitempty"`
}

// Header append actions (envoy.config.core.v3.HeaderValueOption.HeaderAppendAction).
const (
	AppendIfExistsOrAdd    = "APPEND_IF_EXISTS_OR_ADD"
	AddIfAbsent            = "ADD_IF_ABSENT"
	OverwriteIfExistsOrAdd = "OVERWRITE_IF_EXISTS_OR_ADD"
	OverwriteIfExists      = "OVERWRITE_IF_EXISTS"
)

// HeaderToAdd is one *_headers_to_add entry; Value is a text format with omit_empty_values.
type HeaderToAdd struct {
	Key            string `json:"key"`
	Value          Format `json:"value"`
	AppendAction   string `json:"append_action"`
	KeepEmptyValue bool   `json:"keep_empty_value"`
}

// HeaderMutations are the header lists of a route configuration, virtual host or route.
type HeaderMutations struct {
	RequestHeadersToAdd     []HeaderToAdd `json:"request_headers_to_add"`
	RequestHeadersToRemove  []string      `json:"request_headers_to_remove"`
	ResponseHeadersToAdd    []HeaderToAdd `json:"response_headers_to_add"`
	ResponseHeadersToRemove []string      `json:"response_headers_to_remove"`
}

// RetryPolicy is envoy.config.route.v3.RetryPolicy, the route's or else its virtual host's.
type RetryPolicy struct {
	// RetryOn are the retry_on tokens Envoy knows (unknown ones are dropped, as Envoy does).
	RetryOn              []string `json:"retry_on"`
	NumRetries           uint32   `json:"num_retries"`
	PerTryTimeoutMS      uint64   `json:"per_try_timeout_ms"`
	RetriableStatusCodes []uint32 `json:"retriable_status_codes"`
	// BaseIntervalMS / MaxIntervalMS are retry_back_off; nil: Envoy's defaults (25 ms, 10x base).
	BaseIntervalMS *uint64 `json:"base_interval_ms,omitempty"`
	MaxIntervalMS  *uint64 `json:"max_interval_ms,omitempty"`
}

// Filter types.
const (
	FilterGolang = "golang"
	FilterRouter = "router"
)

// HTTPFilter is one entry of http_filters; Golang is set when Type is "golang".
type HTTPFilter struct {
	Name   string        `json:"name"`
	Type   string        `json:"type"`
	Golang *GolangFilter `json:"golang,omitempty"`
}

// GolangFilter is envoy.extensions.filters.http.golang.v3alpha.Config with secrets resolved.
type GolangFilter struct {
	LibraryID   string `json:"library_id"`
	LibraryPath string `json:"library_path"`
	PluginName  string `json:"plugin_name"`
	// PluginConfig is base64 of the serialized google.protobuf.Any (type_url + value), which is
	// what Envoy hands to the Go side.
	PluginConfig string `json:"plugin_config"`
	// Secrets maps each generic_secrets name to base64 of its value.
	Secrets map[string]string `json:"secrets"`
}

// PerFilterConfig is http filter name -> plugin_name -> that plugin's per-route config.
type PerFilterConfig map[string]map[string]RoutePluginConfig

// RoutePluginConfig is one ConfigsPerRoute.plugins_config entry.
type RoutePluginConfig struct {
	Disabled bool `json:"disabled"`
	// Config is base64 of the serialized Any; nil when the entry only disables.
	Config *string `json:"config,omitempty"`
}

// RouteConfiguration is the inline route_config.
type RouteConfiguration struct {
	Name string `json:"name"`
	// Hash identifies the route table's proto (RDS resources only).
	Hash string `json:"hash,omitempty"`
	// Dump (RDS resources only): the route table for /config_dump (see Listener.Dump).
	Dump            string          `json:"dump,omitempty"`
	PerFilterConfig PerFilterConfig `json:"per_filter_config"`
	VirtualHosts    []VirtualHost   `json:"virtual_hosts"`
	Headers         HeaderMutations `json:"headers"`
	// MostSpecificHeaderMutationsWins: route, virtual host, route configuration (instead of the
	// reverse) when the header lists are applied, so the most specific is applied last.
	MostSpecificHeaderMutationsWins bool `json:"most_specific_header_mutations_wins"`
}

// VirtualHost is one virtual host.
type VirtualHost struct {
	Name            string          `json:"name"`
	Domains         []string        `json:"domains"`
	PerFilterConfig PerFilterConfig `json:"per_filter_config"`
	Routes          []Route         `json:"routes"`
	Headers         HeaderMutations `json:"headers"`
	// IncludeRequestAttemptCount / IncludeAttemptCountInResponse: x-envoy-attempt-count on the
	// upstream request / the downstream response.
	IncludeRequestAttemptCount    bool `json:"include_request_attempt_count"`
	IncludeAttemptCountInResponse bool `json:"include_attempt_count_in_response"`
}

// Route has exactly one of Route and DirectResponse.
type Route struct {
	Name            string          `json:"name"`
	Match           RouteMatch      `json:"match"`
	Route           *RouteAction    `json:"route,omitempty"`
	DirectResponse  *DirectResponse `json:"direct_response,omitempty"`
	PerFilterConfig PerFilterConfig `json:"per_filter_config"`
	Headers         HeaderMutations `json:"headers"`
}

// Route match kinds.
const (
	MatchPrefix    = "prefix"
	MatchPath      = "path"
	MatchSafeRegex = "safe_regex"
)

// RouteMatch matches the path (without query) and headers.
type RouteMatch struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
	// CaseSensitive is always true for safe_regex: Envoy ignores case_sensitive there.
	CaseSensitive bool            `json:"case_sensitive"`
	Headers       []HeaderMatcher `json:"headers"`
}

// Header matcher kinds.
const (
	HeaderExact     = "exact"
	HeaderPrefix    = "prefix"
	HeaderSuffix    = "suffix"
	HeaderContains  = "contains"
	HeaderSafeRegex = "safe_regex"
	HeaderPresent   = "present"
	HeaderRange     = "range"
)

// HeaderMatcher is one header condition.
type HeaderMatcher struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Value string `json:"value"`
	// Present is the present_match value; true for every other kind.
	Present bool `json:"present"`
	Invert  bool `json:"invert"`
	// IgnoreCase is always false for safe_regex: Envoy ignores ignore_case there.
	IgnoreCase bool `json:"ignore_case"`
	// RangeStart and RangeEnd are range_match's half-open [start, end) (range only).
	RangeStart int64 `json:"range_start,omitempty"`
	RangeEnd   int64 `json:"range_end,omitempty"`
	// TreatMissingAsEmpty is treat_missing_header_as_empty: an absent header is matched as "".
	TreatMissingAsEmpty bool `json:"treat_missing_as_empty,omitempty"`
}

// RouteAction forwards to exactly one of Cluster, ClusterHeader, WeightedClusters.
type RouteAction struct {
	Cluster            string            `json:"cluster"`
	ClusterHeader      string            `json:"cluster_header"`
	WeightedClusters   []WeightedCluster `json:"weighted_clusters"`
	PrefixRewrite      *string           `json:"prefix_rewrite,omitempty"`
	HostRewriteLiteral *string           `json:"host_rewrite_literal,omitempty"`
	// TimeoutMS is 15000 when unset, as in Envoy; 0 disables the timeout.
	TimeoutMS uint64 `json:"timeout_ms"`
	// ClusterNotFoundResponseCode is cluster_not_found_response_code as a status: 503
	// (SERVICE_UNAVAILABLE, the default), 404 (NOT_FOUND) or 500 (INTERNAL_SERVER_ERROR).
	ClusterNotFoundResponseCode uint32 `json:"cluster_not_found_response_code"`
	// RetryPolicy is the route's retry_policy, else its virtual host's; nil: none (retries can
	// still be asked for with x-envoy-retry-on, as in Envoy).
	RetryPolicy *RetryPolicy `json:"retry_policy,omitempty"`
	// UpgradeConfigs is the route's upgrade_configs: per upgrade type, allowed or refused on
	// this route whatever the connection manager says.
	UpgradeConfigs []UpgradeConfig `json:"upgrade_configs,omitempty"`
}

// WeightedCluster is one weighted_clusters.clusters entry.
type WeightedCluster struct {
	Name   string `json:"name"`
	Weight uint32 `json:"weight"`
}

// DirectResponse answers without an upstream.
type DirectResponse struct {
	Status uint32 `json:"status"`
	Body   string `json:"body"`
}

// Cluster types.
const (
	ClusterStatic    = "STATIC"
	ClusterStrictDNS = "STRICT_DNS"
)

// Cluster is one upstream cluster, round-robin over its endpoints.
type Cluster struct {
	Name string `json:"name"`
	// Hash identifies the cluster's proto (CDS resources only): an unchanged cluster is kept.
	Hash string `json:"hash,omitempty"`
	// Dump (CDS resources only): the cluster for /config_dump (see Listener.Dump).
	Dump                          string          `json:"dump,omitempty"`
	Type                          string          `json:"type"`
	ConnectTimeoutMS              uint64          `json:"connect_timeout_ms"`
	DNSRefreshRateMS              uint64          `json:"dns_refresh_rate_ms"`
	PerConnectionBufferLimitBytes uint32          `json:"per_connection_buffer_limit_bytes"`
	Endpoints                     []SocketAddress `json:"endpoints"`
}
