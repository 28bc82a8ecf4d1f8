// StreamInfo: what Envoy's StreamInfo::StreamInfo records about one downstream request and that
// filters (the golang filter's GetStringValue/GetIntegerValue/properties/metadata) read.
// Owned by the ActiveStream; touched only on its worker thread (off-thread readers hold the
// golang filter's mutex, which the worker also holds while destroying the stream).
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codec.h"

namespace moe {

// envoy.data.accesslog.v3.AccessLogType, the values the HTTP connection manager logs with (the
// golang filter passes them to Go's OnLog*).
enum class AccessLogType { NotSet = 0, DownstreamStart = 4, DownstreamPeriodic = 5, DownstreamEnd = 6 };

struct StreamInfo {
  ConnectionInfo downstream;
  int protocol = 1;                                  // Http::Protocol: 0 HTTP/1.0, 1 HTTP/1.1
  std::chrono::system_clock::time_point start_time = std::chrono::system_clock::now();
  std::chrono::steady_clock::time_point start_steady = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> last_downstream_rx; // request complete
  std::optional<std::chrono::steady_clock::time_point> first_upstream_rx;  // upstream headers
  std::optional<std::chrono::steady_clock::time_point> upstream_tx_start;
  std::optional<std::chrono::steady_clock::time_point> last_downstream_tx; // response complete
  std::optional<std::chrono::steady_clock::time_point> completed;

  std::optional<uint32_t> response_code;
  std::optional<std::string> response_code_details;
  std::string response_flags;                        // Envoy short flags, e.g. "NR", "UF", "UT"
  std::string route_name, virtual_host_name, filter_chain_name;
  // StreamInfo::route() is set: the last route resolution found a route (route_name is "" when
  // not, as getRouteName answers EMPTY_STRING).
  bool has_route = false;
  std::optional<std::string> upstream_cluster;       // set when the router picked a cluster
  std::optional<std::string> upstream_remote_address; // "ip:port" once a connection was bound
  std::optional<std::string> upstream_local_address;
  // Every host an attempt was sent to ("ip:port"), in order (UpstreamInfo::upstreamHostsAttempted).
  std::vector<std::string> upstream_hosts_attempted;
  std::string upstream_transport_failure_reason;     // e.g. "delayed connect error: 111"
  std::optional<uint32_t> attempt_count;
  std::string request_id;

  // filter_metadata: filter name -> key -> serialized google.protobuf.Value.
  std::map<std::string, std::map<std::string, std::string>> dynamic_metadata;
  // Filter state string objects (Router::StringAccessor) by key.
  std::map<std::string, std::string> filter_state;
  bool drain_connection_upon_completion = false;
  // LoadBalancerContext::OverrideHost (host, strict) set by a filter for the router.
  std::optional<std::pair<std::string, bool>> upstream_override_host;

  uint64_t bytes_received = 0;                       // request body bytes
  uint64_t bytes_sent = 0;                           // response body bytes
  uint64_t request_wire_bytes = 0;
  uint64_t response_header_bytes = 0;

  // StreamInfoImpl::setResponseFlag: each flag once, in the order set.
  void addResponseFlag(const char* flag) {
    for (auto& f : response_flag_list) {
      if (f == flag) return;
    }
    response_flag_list.emplace_back(flag);
    if (!response_flags.empty()) response_flags += ",";
    response_flags += flag;
    legacy_response_flags |= responseFlagBit(flag);
  }
  std::vector<std::string> response_flag_list;

  // The bitmask of core flags Envoy's `response.flags` attribute answers
  // (StreamInfoImpl::legacyResponseFlags, source/common/stream_info/stream_info_impl.h:303-312):
  // bit N is CoreResponseFlag N (envoy/stream_info/stream_info.h:40-...).
  uint64_t legacy_response_flags = 0;

  static uint64_t responseFlagBit(std::string_view flag) {
    // Short names in CoreResponseFlag order (ResponseFlagUtils, source/common/stream_info/utility.h).
    static constexpr const char* kCore[] = {
        "LH", "UH", "UT", "LR", "UR", "UF", "UC", "UO", "NR", "DI", "FI", "RL", "UAEX", "RLSE",
        "DC", "URX", "SI", "IH", "DPE", "UMSDR", "RFCF", "NFCF", "DT", "UPE", "NC", "OM", "DF",
        "DO", "DR", "UDO"};
    for (size_t i = 0; i < sizeof(kCore) / sizeof(kCore[0]); i++) {
      if (flag == kCore[i]) return uint64_t{1} << i;
    }
    return 0;
  }
};

} // namespace moe
