// conn_manager: Envoy's HTTP connection manager (source/common/http/conn_manager_impl.cc),
// reduced to HTTP/1.1. The factory (one per listener) owns the parsed config: route table and
// http filter chain (golang filter configs are parsed by Go at creation). Per connection a
// ConnectionManager; per request an ActiveStream that owns the FilterManager and ends the
// stream in Envoy's order: onStreamComplete on every filter, access log (DownstreamEnd), then
// onDestroy (conn_manager_impl.cc:369-387).
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "access_log.h"
#include "bootstrap.h"
#include "filter_manager.h"
#include "golang_filter.h"
#include "route_config_provider.h"
#include "route_table.h"
#include "server.h"
#include "stats.h"

namespace moe {

// Envoy's ConnectionManagerNamedStats subset, under "http.<stat_prefix>.".
struct ConnectionManagerStats {
  explicit ConnectionManagerStats(const std::string& prefix);
  Counter& downstream_cx_total;
  Counter& downstream_cx_http1_total;
  Gauge& downstream_cx_active;
  Gauge& downstream_cx_http1_active;
  Counter& downstream_cx_destroy;
  Histogram& downstream_cx_length_ms;
  Counter& downstream_rq_total;
  Counter& downstream_rq_http1_total;
  Counter& downstream_rq_completed;
  Counter* downstream_rq_xx[5]; // 1xx..5xx
  Gauge& downstream_rq_active;
  Histogram& downstream_rq_time;
  Counter& downstream_cx_destroy_remote_active_rq;
  Counter& downstream_rq_response_before_rq_complete;
  Counter& downstream_rq_idle_timeout;
  Counter& downstream_rq_timeout;
  Counter& downstream_rq_header_timeout;
  Counter& downstream_rq_ws_on_non_ws_route;
  Counter& downstream_cx_upgrades_total;
  Gauge& downstream_cx_upgrades_active;
  Counter& downstream_rq_failed_path_normalization;
  Counter& downstream_rq_redirected_with_normalized_path;
  Counter& downstream_cx_drain_close;
  Counter& downstream_flow_control_paused_reading_total;
  Counter& downstream_flow_control_resumed_reading_total;
};

// The listener's view of its HTTP connection manager ("listener.<address>.http.<stat_prefix>.",
// Envoy's ConnectionManagerListenerStats).
struct ConnectionManagerListenerStats {
  explicit ConnectionManagerListenerStats(const std::string& prefix);
  Counter& downstream_rq_completed;
  Counter* downstream_rq_xx[5];
};

class HttpConnectionManagerFactoryImpl : public HttpConnectionManagerFactory {
public:
  HttpConnectionManagerFactoryImpl(const bootstrap::Listener& config, Server& server);

  std::unique_ptr<ServerConnectionCallbacks>
  createConnectionManager(Dispatcher& worker, const ConnectionInfo& conn) override;
  uint32_t maxRequestHeadersBytes() const override { return config_.hcm.max_request_headers_kb * 1024; }
  void setListenerAddress(const std::string& ip, uint16_t port) override;

  // Adds this listener's http filters to a new stream (Envoy's FilterChainFactory).
  void createFilterChain(FilterManager& fm, uint32_t worker_id) const;

  const bootstrap::Listener& config() const { return config_; }
  // The route table version current now (nullptr: an RDS table that never loaded).
  RouteConfigConstSharedPtr routeConfig() const { return route_provider_->config(); }
  Server& server() { return server_; }
  ConnectionManagerStats& stats() { return stats_; }
  // Set before the workers start (setListenerAddress).
  ConnectionManagerListenerStats* listenerStats() { return listener_stats_.get(); }

private:
  struct FilterFactory {
    bootstrap::HttpFilter::Type type;
    golang::FilterConfigSharedPtr golang; // for Golang
  };

  const bootstrap::Listener config_;
  Server& server_;
  std::vector<FilterFactory> filters_;
  std::vector<std::unique_ptr<AccessLogInstance>> access_logs_;
  RouteConfigProviderSharedPtr route_provider_; // inline route_config or RDS
  ConnectionManagerStats stats_;
  std::unique_ptr<ConnectionManagerListenerStats> listener_stats_;
};

class ConnectionManager;

class ActiveStream : public RequestDecoder, public FilterManagerCallbacks {
public:
  ActiveStream(ConnectionManager& parent, ResponseEncoder& encoder, uint64_t id);
  ~ActiveStream() override;

  // RequestDecoder (from the codec)
  void decodeHeaders(HeaderMapPtr headers, bool end_stream) override;
  void decodeData(Buffer& data, bool end_stream) override;
  void decodeTrailers(HeaderMapPtr trailers) override;
  void onResetStream(StreamResetReason reason) override;
  void onAboveWriteBufferHighWatermark() override;
  void onBelowWriteBufferLowWatermark() override;

  // FilterManagerCallbacks (from the filter chain)
  void encodeHeadersToCodec(HeaderMap& headers, bool end_stream) override;
  void encodeDataToCodec(Buffer& data, bool end_stream) override;
  void encodeTrailersToCodec(HeaderMap& trailers) override;
  void resetDownstream() override;
  MatchedRouteConstSharedPtr matchRoute(const HeaderMap& request_headers) override;
  bool clusterExists(const std::string& name) override;
  void readDisableDownstream(bool disable) override;
  void onUpgradeRejected() override;
  bool upgradeAllowed(std::string_view type, const bootstrap::RouteAction* route) override;
  void onUpgradeAccepted() override;

  bool ended() const { return ended_; }

private:
  // Stream end (conn_manager_impl.cc doEndStream/doDeferredStreamDestroy).
  void endStream();
  void resetIdleTimer();
  void onIdleTimeout();
  void onRequestTimeout();
  void onRequestHeaderTimeout();
  void maybeDisarmRequestTimer();
  // maybeNormalizePath / maybeNormalizeHost (path_normalizer.h); false when the request was
  // refused (400, or the 307 of UNESCAPE_AND_REDIRECT).
  bool normalizeRequestTarget(HeaderMapPtr& headers, bool end_stream);

  ConnectionManager& parent_;
  ResponseEncoder* encoder_; // nullptr once the codec is done with this stream
  // The route table version this stream uses, taken when its headers arrive (Envoy's
  // snapped_route_config_): a newer table serves later streams.
  RouteConfigConstSharedPtr route_config_;
  StreamInfo info_;
  FilterManager filter_manager_;
  TimerPtr access_log_flush_timer_; // DownstreamPeriodic logs
  TimerPtr idle_timer_;             // stream_idle_timeout_ms, reset on every frame
  TimerPtr request_timer_;          // request_timeout_ms, until the request is complete
  TimerPtr request_header_timer_;   // request_headers_timeout_ms, until the headers are decoded
  bool ended_ = false;
  bool successful_upgrade_ = false; // counted in downstream_cx_upgrades_active until the end
};

class ConnectionManager : public ServerConnectionCallbacks {
public:
  ConnectionManager(std::shared_ptr<HttpConnectionManagerFactoryImpl> factory, Dispatcher& worker,
                    const ConnectionInfo& conn);
  ~ConnectionManager() override;

  RequestDecoder& newStream(ResponseEncoder& encoder) override;
  void onConnectionClose() override;

  HttpConnectionManagerFactoryImpl& factory() { return *factory_; }
  Dispatcher& dispatcher() { return worker_; }
  uint32_t workerId() const { return worker_id_; }
  const ConnectionInfo& connection() const { return conn_; }
  // Called by an ended stream: it leaves the list and is deleted after the current event.
  void removeStream(ActiveStream* stream);
  void onRemoteCloseWithActiveStream();

private:
  // Held: a listener update or removal leaves this connection on the version it was accepted
  // for until it closes (listener_manager.h).
  std::shared_ptr<HttpConnectionManagerFactoryImpl> factory_;
  Dispatcher& worker_;
  uint32_t worker_id_;
  ConnectionInfo conn_;
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  std::list<std::unique_ptr<ActiveStream>> streams_;
  bool counted_remote_close_ = false;
};

} // namespace moe
