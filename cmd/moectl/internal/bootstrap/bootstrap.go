// Package bootstrap holds the compiled bootstrap: the JSON that `moectl compile` prints and
// moe-host parses (cgo/host/bootstrap.h). Its shape is the contract documented in
// cgo/host/compiled-bootstrap.md; change both together.
//
// Conventions from that contract: durations are milliseconds, byte strings (serialized Any,
// secret values) are standard base64 strings, and every key is present (empty lists and maps
// are [] and {}, never null) unless the field is a pointer with omitempty.
package bootstrap

// Bootstrap is the whole compiled file.
type Bootstrap struct {
	Admin     *SocketAddress `json:"admin,omitempty"`
	Listeners []Listener     `json:"listeners"`
	Clusters  []Cluster      `json:"clusters"`
	// DynamicResources are the files LDS and CDS read (dynamic_resources with
	// path_config_source); absent when the bootstrap has none.
	DynamicResources *DynamicResources `json:"dynamic_resources,omitempty"`
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
	AccessLogFlushIntervalMS uint64             `json:"access_log_flush_interval_ms"`
	HTTPFilters              []HTTPFilter       `json:"http_filters"`
	RouteConfig              RouteConfiguration `json:"route_config"`
	// RDS, when set, replaces RouteConfig (which is then empty): the route table comes from a
	// file and changes without the listener changing.
	RDS *RDS `json:"rds,omitempty"`
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
	Hash            string          `json:"hash,omitempty"`
	PerFilterConfig PerFilterConfig `json:"per_filter_config"`
	VirtualHosts    []VirtualHost   `json:"virtual_hosts"`
}

// VirtualHost is one virtual host.
type VirtualHost struct {
	Name            string          `json:"name"`
	Domains         []string        `json:"domains"`
	PerFilterConfig PerFilterConfig `json:"per_filter_config"`
	Routes          []Route         `json:"routes"`
}

// Route has exactly one of Route and DirectResponse.
type Route struct {
	Name            string          `json:"name"`
	Match           RouteMatch      `json:"match"`
	Route           *RouteAction    `json:"route,omitempty"`
	DirectResponse  *DirectResponse `json:"direct_response,omitempty"`
	PerFilterConfig PerFilterConfig `json:"per_filter_config"`
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
	Hash                          string          `json:"hash,omitempty"`
	Type                          string          `json:"type"`
	ConnectTimeoutMS              uint64          `json:"connect_timeout_ms"`
	DNSRefreshRateMS              uint64          `json:"dns_refresh_rate_ms"`
	PerConnectionBufferLimitBytes uint32          `json:"per_connection_buffer_limit_bytes"`
	Endpoints                     []SocketAddress `json:"endpoints"`
}
