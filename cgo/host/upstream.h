// Upstream side: clusters, per-worker HTTP/1.1 connection pools, and one upstream request.
// Implemented in cluster.* / conn_pool.* / http1_codec.*; used by the router filter.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "buffer.h"
#include "header_map.h"
#include "stats.h"

namespace moe {

class Dispatcher;

enum class UpstreamResetReason {
  ConnectionFailure,     // connect refused or connect_timeout elapsed
  ConnectionTermination, // upstream closed / errored mid-stream
  ProtocolError,         // unparseable response
  LocalReset,            // reset() called
};
const char* toString(UpstreamResetReason r);

// Events of one upstream request, delivered on the worker thread that created it.
class UpstreamCallbacks {
public:
  virtual ~UpstreamCallbacks() = default;
  // A connection was bound to the request; host is "ip:port" of the chosen endpoint.
  virtual void onPoolReady(const std::string& host) = 0;
  virtual void onUpstreamHeaders(HeaderMapPtr headers, bool end_stream) = 0; // ":status" first
  virtual void onUpstreamData(Buffer& data, bool end_stream) = 0;
  virtual void onUpstreamTrailers(HeaderMapPtr trailers) = 0;
  // The request failed; no more callbacks follow. Not called after reset().
  virtual void onUpstreamReset(UpstreamResetReason reason, const std::string& details) = 0;
  // The upstream connection's write buffer went above its high watermark / drained below the
  // low one (Envoy's UpstreamRequest::onAbove/BelowWriteBufferHighWatermark): stop / resume
  // feeding it request data.
  virtual void onUpstreamAboveWriteBufferHighWatermark() {}
  virtual void onUpstreamBelowWriteBufferLowWatermark() {}
};

// One request on an upstream connection. encode* may be called before the connection is
// ready: the request is queued and written once connected.
class UpstreamRequest {
public:
  virtual ~UpstreamRequest() = default;
  // headers: :method :path :authority first; the codec writes Host from :authority.
  virtual void encodeHeaders(const HeaderMap& headers, bool end_stream) = 0;
  virtual void encodeData(Buffer& data, bool end_stream) = 0;
  virtual void encodeTrailers(const HeaderMap& trailers) = 0;
  // Cancel: no further callbacks; the connection is closed (not returned to the pool).
  virtual void reset() = 0;
  // Stop / resume reading the response from the upstream connection, reference-counted as
  // Envoy's Connection::readDisable. Undone when the response completes.
  virtual void readDisable(bool disable) = 0;
};
using UpstreamRequestPtr = std::unique_ptr<UpstreamRequest>;

struct Endpoint {
  std::string ip;
  uint16_t port = 0;
  std::string str() const; // "ip:port" or "[v6]:port"
};

// Per-host stats (envoy/upstream/host_description.h ALL_HOST_STATS), shown on /clusters.
struct HostStats {
  Counter cx_connect_fail, cx_total, rq_error, rq_success, rq_timeout, rq_total;
  Gauge cx_active, rq_active, rq_pending_active;
};

// One cluster's stats under "cluster.<name>." (Envoy's ClusterTrafficStats subset that moe-host
// maintains, the router's response code and timing stats, per-host stats) and its retry
// circuit breaker.
class ClusterStats {
public:
  explicit ClusterStats(const std::string& cluster_name);

  const std::string prefix;  // "cluster.<name>."
  Counter &upstream_cx_total, &upstream_cx_connect_fail, &upstream_cx_connect_timeout,
      &upstream_cx_destroy, &upstream_cx_destroy_local, &upstream_cx_destroy_remote,
      &upstream_rq_total, &upstream_rq_timeout, &upstream_rq_per_try_timeout, &upstream_rq_retry,
      &upstream_rq_retry_success, &upstream_rq_retry_limit_exceeded, &upstream_rq_retry_overflow,
      &upstream_rq_retry_backoff_exponential, &retry_or_shadow_abandoned, &upstream_rq_tx_reset,
      &upstream_rq_rx_reset;
  Gauge &upstream_cx_active, &upstream_rq_active;
  Histogram& upstream_cx_connect_ms;

  // Http::CodeStatsImpl::chargeResponseStat (source/common/http/codes.cc): upstream_rq_completed,
  // upstream_rq_<N>xx, upstream_rq_<code>, and the same under external. (or internal.).
  void chargeResponse(uint32_t code, bool internal_request);
  // chargeBasicResponseStat with the "retry" prefix: a response that was retried.
  void chargeRetryResponse(uint32_t code);
  // CodeStatsImpl::chargeResponseTiming: upstream_rq_time and external.upstream_rq_time (ms).
  void chargeResponseTiming(uint64_t ms, bool internal_request);

  HostStats& host(const std::string& address);
  // Hosts in the order their stats were first used.
  std::vector<std::pair<std::string, HostStats*>> hosts();

  // The retry circuit breaker (circuit_breakers default max_retries, 3): retries in progress.
  std::atomic<uint32_t> retries_open{0};
  static constexpr uint32_t kMaxRetries = 3;

private:
  Counter& code(const std::string& scope, uint32_t code);
  std::mutex mu_;
  std::vector<std::pair<std::string, std::unique_ptr<HostStats>>> hosts_;
};

class Cluster {
public:
  virtual ~Cluster() = default;
  virtual const std::string& name() const = 0;
  // Current endpoints (STRICT_DNS: the last resolution). Thread-safe snapshot.
  virtual std::vector<Endpoint> endpoints() const = 0;
  virtual ClusterStats& stats() = 0;
  virtual uint64_t connectTimeoutMs() const = 0;
  // Starts an upstream request on the calling worker's pool for this cluster. override_host
  // ("ip" or "ip:port", from SetUpstreamOverrideHost) picks that endpoint when it is one of the
  // cluster's hosts (or, when strict is false and it is not, falls back to round robin; when
  // strict is true and it is not, fails with ConnectionFailure). Returns nullptr and calls
  // nothing when the cluster has no endpoints (caller answers 503 "no healthy upstream").
  // upgrade (an upgrade the connection manager allowed): a new connection, never taken from
  // nor returned to the pool, on which the request keeps connection/upgrade and is not
  // chunked.
  virtual UpstreamRequestPtr newRequest(Dispatcher& worker, UpstreamCallbacks& cb,
                                        const std::optional<std::string>& override_host,
                                        bool override_strict, bool upgrade) = 0;
};

using ClusterSharedPtr = std::shared_ptr<Cluster>;

class ClusterManager {
public:
  virtual ~ClusterManager() = default;
  // nullptr when unknown. Thread-safe; the caller keeps the cluster alive while it uses it (a
  // CDS update may remove or replace it meanwhile, as in Envoy).
  virtual ClusterSharedPtr get(const std::string& name) = 0;
  // Every cluster now: static ones in bootstrap order, then CDS ones as added. Thread-safe.
  virtual std::vector<ClusterSharedPtr> all() = 0;
};

} // namespace moe
