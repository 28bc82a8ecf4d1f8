// The compiled bootstrap: what `moectl compile` emits as JSON from an Envoy bootstrap YAML after
// validating it with Envoy's own protos. The host never parses Envoy YAML itself; moectl refuses
// any field the host does not support, naming its YAML path. Schema: cgo/host/README.md.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace moe::bootstrap {

struct SocketAddress {
  std::string address;
  uint16_t port = 0;
};

// One golang plugin's per-route config (ConfigsPerRoute.plugins_config[plugin_name]).
struct RoutePluginConfig {
  bool disabled = false;          // passed along; Envoy's C++ ignores it
  bool has_config = false;
  std::string config_any;         // serialized google.protobuf.Any (decoded from base64)
};
// typed_per_filter_config: http filter name -> plugin_name -> RoutePluginConfig
using PerFilterConfig = std::map<std::string, std::map<std::string, RoutePluginConfig>>;

// A parsed substitution format (compiled-bootstrap.md "Formats"): text tokens, or JSON pieces.
struct FormatToken {
  std::string text;                   // a literal when command is empty
  std::string command;                // e.g. "REQ", "START_TIME"
  std::vector<std::string> args;      // the subcommand, split the way the command reads it
  std::optional<uint64_t> max_length;
};
struct FormatJsonPiece {
  std::optional<std::string> raw;     // raw JSON text, or
  std::vector<FormatToken> tmpl;      // a template making one value
};
struct Format {
  enum class Kind { Text, Json } kind = Kind::Text;
  bool omit_empty_values = false;
  std::vector<FormatToken> text;
  std::vector<FormatJsonPiece> json;
};

struct HeaderMatcher {
  std::string name;
  enum class Kind { Exact, Prefix, Suffix, Contains, SafeRegex, Present, Range } kind = Kind::Present;
  std::string value;      // Exact, Prefix, Suffix, Contains, SafeRegex
  bool present = true;    // Present
  int64_t range_start = 0, range_end = 0;  // Range: [start, end)
  bool invert = false;
  bool ignore_case = false;
  bool treat_missing_as_empty = false;
};

// One node of an access log filter tree (envoy.config.accesslog.v3.AccessLogFilter).
struct AccessLogFilter {
  enum class Type {
    StatusCode, Duration, NotHealthCheck, Traceable, Runtime, And, Or, Header, ResponseFlag, GrpcStatus, LogType
  } type = Type::StatusCode;
  enum class Op { EQ, GE, LE, NE } op = Op::EQ;  // StatusCode, Duration
  uint32_t value = 0;
  std::vector<AccessLogFilter> filters;           // And, Or
  std::optional<HeaderMatcher> header;            // Header
  std::vector<std::string> flags;                 // ResponseFlag
  std::vector<uint32_t> statuses;                 // GrpcStatus
  std::vector<std::string> types;                 // LogType
  bool exclude = false;                           // GrpcStatus, LogType
  uint32_t numerator = 0, denominator = 100;      // Runtime
  bool independent_randomness = false;
};

struct AccessLog {
  std::string name;
  enum class Type { File, Stdout, Stderr } type = Type::File;
  std::string path;                   // File
  Format format;
  std::optional<AccessLogFilter> filter;
};

struct HeaderToAdd {
  std::string key;                    // lowercased
  Format value;                       // text, omit_empty_values
  enum class Action { AppendIfExistsOrAdd, AddIfAbsent, OverwriteIfExistsOrAdd, OverwriteIfExists } action =
      Action::AppendIfExistsOrAdd;
  bool keep_empty_value = false;
};

// The header lists of a route configuration, virtual host or route (HeaderParser).
struct HeaderMutations {
  std::vector<HeaderToAdd> request_add, response_add;
  std::vector<std::string> request_remove, response_remove;
  bool empty() const {
    return request_add.empty() && response_add.empty() && request_remove.empty() && response_remove.empty();
  }
};

struct RetryPolicy {
  std::vector<std::string> retry_on;
  uint32_t num_retries = 1;
  uint64_t per_try_timeout_ms = 0;
  std::vector<uint32_t> retriable_status_codes;
  std::optional<uint64_t> base_interval_ms, max_interval_ms;
};


struct RouteMatch {
  enum class Kind { Prefix, Path, SafeRegex } kind = Kind::Prefix;
  std::string value;
  bool case_sensitive = true;
  std::vector<HeaderMatcher> headers;
};

struct WeightedCluster {
  std::string name;
  uint32_t weight = 0;
};

// One upgrade_configs entry (connection manager or route): the type, lowercased by moectl
// (Envoy compares upgrade types case-insensitively), and whether it is allowed.
struct UpgradeConfig {
  std::string upgrade_type;
  bool enabled = true;
};

struct RouteAction {
  std::string cluster;                        // one of cluster,
  std::string cluster_header;                 //   cluster_header,
  std::vector<WeightedCluster> weighted_clusters; // weighted_clusters
  std::optional<std::string> prefix_rewrite;
  std::optional<std::string> host_rewrite_literal;
  uint64_t timeout_ms = 15000;                // 0 = disabled, as in Envoy
  // RouteAction.cluster_not_found_response_code as a status: 503 (SERVICE_UNAVAILABLE, the
  // default), 404 (NOT_FOUND) or 500 (INTERNAL_SERVER_ERROR); config_utility.cc
  // parseClusterNotFoundResponseCode.
  uint32_t cluster_not_found_response_code = 503;
  // The route's retry_policy, else its virtual host's (config_impl.cc buildRetryPolicy).
  std::optional<RetryPolicy> retry_policy;
  // RouteAction.upgrade_configs: per type, allowed or refused on this route over the
  // connection manager's list (http_connection_manager/config.cc:867-897).
  std::vector<UpgradeConfig> upgrade_configs;
};

struct DirectResponse {
  uint32_t status = 200;
  std::string body;
};

struct Route {
  std::string name;
  RouteMatch match;
  std::optional<RouteAction> route;           // one of route,
  std::optional<DirectResponse> direct_response; // direct_response
  PerFilterConfig per_filter_config;
  HeaderMutations headers;
};

struct VirtualHost {
  std::string name;
  std::vector<std::string> domains;
  std::vector<Route> routes;
  PerFilterConfig per_filter_config;
  HeaderMutations headers;
  bool include_request_attempt_count = false;
  bool include_attempt_count_in_response = false;
};

struct RouteConfiguration {
  std::string name;
  std::string hash; // RDS resources: identifies the proto (an unchanged table is not reloaded)
  std::string dump; // RDS resources: the table for /config_dump (an Any, JSON text)
  std::vector<VirtualHost> virtual_hosts;
  PerFilterConfig per_filter_config;
  HeaderMutations headers;
  bool most_specific_header_mutations_wins = false;
};

struct GolangFilter {
  std::string library_id;
  std::string library_path;
  std::string plugin_name;
  std::string plugin_config_any;              // serialized google.protobuf.Any
  std::map<std::string, std::string> secrets; // generic_secrets resolved to their values
};

struct HttpFilter {
  std::string name;                           // http_filters[].name (key of typed_per_filter_config)
  enum class Type { Golang, Router } type = Type::Router;
  GolangFilter golang;                        // when type == Golang
};

// A filesystem config source (path_config_source): the file holds a DiscoveryResponse, re-read
// when a file is moved onto path, or into watched_directory when that is set.
struct ConfigSource {
  std::string path;
  std::string watched_directory; // "" = watch the file's own directory for a move onto path
  bool watch_modify = false;     // watched_directory.watch_modify: in-place writes count too
};

// HttpConnectionManager.rds: the route table comes from a file.
struct Rds {
  std::string route_config_name;
  ConfigSource config_source;
};

struct HttpConnectionManager {
  std::string stat_prefix;
  uint32_t max_request_headers_kb = 60;
  uint64_t request_timeout_ms = 0;            // 0 = disabled (Envoy default)
  uint64_t request_headers_timeout_ms = 0;    // 0 = disabled (Envoy default)
  uint64_t stream_idle_timeout_ms = 300000;   // Envoy default 5 min
  // access_log_options (optional in the JSON): DownstreamStart / DownstreamPeriodic access logs.
  bool flush_access_log_on_new_request = false;
  uint64_t access_log_flush_interval_ms = 0;  // 0 = no periodic log
  // Request-target normalisation (path_normalizer.h); Envoy's defaults: all off, escaped
  // slashes kept (IMPLEMENTATION_SPECIFIC_DEFAULT is KEEP_UNCHANGED without a runtime override).
  bool normalize_path = false;
  bool merge_slashes = false;
  enum class EscapedSlashesAction { KeepUnchanged, RejectRequest, UnescapeAndRedirect, UnescapeAndForward };
  EscapedSlashesAction path_with_escaped_slashes_action = EscapedSlashesAction::KeepUnchanged;
  enum class StripPort { None, MatchingHost, Any }; // strip_matching_host_port / strip_any_host_port
  StripPort strip_port = StripPort::None;
  bool strip_trailing_host_dot = false;
  std::vector<HttpFilter> http_filters;
  RouteConfiguration route_config;            // empty when rds is set
  std::optional<Rds> rds;
  std::vector<AccessLog> access_log;
  // upgrade_configs: the upgrade types (websocket, ...) proxied as upgrades; anything else
  // that asks for an upgrade is refused with 403 (conn_manager_impl.cc:1578-1588).
  std::vector<UpgradeConfig> upgrade_configs;
};

struct Listener {
  std::string name;
  std::string hash; // LDS resources: identifies the proto (an unchanged listener is skipped)
  std::string dump; // LDS resources: the listener for /config_dump (an Any, JSON text)
  std::string route_config_dump; // LDS resources: its inline route_config the same way ("" with RDS)
  SocketAddress address;
  HttpConnectionManager hcm;
  uint32_t per_connection_buffer_limit_bytes = 1024 * 1024; // Envoy default 1 MiB
};

struct ClusterConfig {
  std::string name;
  std::string hash; // CDS resources: identifies the proto (an unchanged cluster is kept)
  std::string dump; // CDS resources: the cluster for /config_dump (an Any, JSON text)
  enum class Type { Static, StrictDns } type = Type::Static;
  uint64_t connect_timeout_ms = 5000;
  uint64_t dns_refresh_rate_ms = 5000;
  std::vector<SocketAddress> endpoints;
  uint32_t per_connection_buffer_limit_bytes = 1024 * 1024;
};

struct Admin {
  SocketAddress address;
};

struct DynamicResources {
  std::optional<ConfigSource> lds; // dynamic_resources.lds_config
  std::optional<ConfigSource> cds; // dynamic_resources.cds_config
};

struct Bootstrap {
  std::optional<Admin> admin;
  std::vector<Listener> listeners;
  std::vector<ClusterConfig> clusters;
  DynamicResources dynamic_resources;
  std::string config_dump;                    // the admin /config_dump body (JSON text)
};

// One xDS resource file compiled by `moectl compile --lds/--cds/--rds FILE`.
struct Resources {
  std::string version_info;
  std::vector<Listener> listeners;
  std::vector<ClusterConfig> clusters;
  std::vector<RouteConfiguration> route_configs;
};

// Parses the compiled JSON. Throws std::runtime_error naming the JSON path on error.
Bootstrap parseJson(const std::string& json);
// Parses the JSON of a compiled resource file. Throws std::runtime_error on error.
Resources parseResourcesJson(const std::string& json);

} // namespace moe::bootstrap
