#include "conn_manager.h"

#include <atomic>
#include <cstdio>
#include <ctime>
#include <random>

#include "formatter.h"
#include "logger.h"
#include "path_normalizer.h"
#include "router.h"

namespace moe {
namespace {

std::atomic<int64_t> g_active_streams{0};
std::atomic<uint64_t> g_next_stream_id{1};

// RFC 7231 IMF-fixdate, as Envoy's date provider writes it.
std::string httpDate() {
  time_t now = time(nullptr);
  struct tm tmv;
  gmtime_r(&now, &tmv);
  char buf[64];
  strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tmv);
  return buf;
}

// config.cc:37-47: the golang filter takes its worker id from the dispatcher name "worker_N".
uint32_t workerIdFromName(const std::string& name, uint32_t fallback) {
  auto pos = name.find('_');
  if (pos == std::string::npos) return fallback;
  try {
    return static_cast<uint32_t>(std::stoul(name.substr(pos + 1)));
  } catch (...) {
    return fallback;
  }
}

} // namespace

int64_t activeDownstreamStreams() { return g_active_streams.load(); }

std::unique_ptr<HttpConnectionManagerFactory>
createHttpConnectionManagerFactory(const bootstrap::Listener& config, Server& server) {
  // Throws when Go rejects a config (filter or per-route) or a library fails to load.
  return std::make_unique<HttpConnectionManagerFactoryImpl>(config, server);
}

ConnectionManagerStats::ConnectionManagerStats(const std::string& prefix)
    : downstream_cx_total(moe::stats().counter(prefix + "downstream_cx_total")),
      downstream_cx_http1_total(moe::stats().counter(prefix + "downstream_cx_http1_total")),
      downstream_cx_active(moe::stats().gauge(prefix + "downstream_cx_active")),
      downstream_cx_http1_active(moe::stats().gauge(prefix + "downstream_cx_http1_active")),
      downstream_cx_destroy(moe::stats().counter(prefix + "downstream_cx_destroy")),
      downstream_cx_length_ms(moe::stats().histogram(prefix + "downstream_cx_length_ms")),
      downstream_rq_total(moe::stats().counter(prefix + "downstream_rq_total")),
      downstream_rq_http1_total(moe::stats().counter(prefix + "downstream_rq_http1_total")),
      downstream_rq_completed(moe::stats().counter(prefix + "downstream_rq_completed")),
      downstream_rq_active(moe::stats().gauge(prefix + "downstream_rq_active")),
      downstream_rq_time(moe::stats().histogram(prefix + "downstream_rq_time")),
      downstream_cx_destroy_remote_active_rq(
          moe::stats().counter(prefix + "downstream_cx_destroy_remote_active_rq")),
      downstream_rq_response_before_rq_complete(
          moe::stats().counter(prefix + "downstream_rq_response_before_rq_complete")),
      downstream_rq_idle_timeout(moe::stats().counter(prefix + "downstream_rq_idle_timeout")),
      downstream_rq_timeout(moe::stats().counter(prefix + "downstream_rq_timeout")),
      downstream_rq_header_timeout(moe::stats().counter(prefix + "downstream_rq_header_timeout")),
      downstream_rq_ws_on_non_ws_route(moe::stats().counter(prefix + "downstream_rq_ws_on_non_ws_route")),
      downstream_cx_upgrades_total(moe::stats().counter(prefix + "downstream_cx_upgrades_total")),
      downstream_cx_upgrades_active(moe::stats().gauge(prefix + "downstream_cx_upgrades_active")),
      downstream_rq_failed_path_normalization(
          moe::stats().counter(prefix + "downstream_rq_failed_path_normalization")),
      downstream_rq_redirected_with_normalized_path(
          moe::stats().counter(prefix + "downstream_rq_redirected_with_normalized_path")),
      downstream_cx_drain_close(moe::stats().counter(prefix + "downstream_cx_drain_close")),
      downstream_flow_control_paused_reading_total(
          moe::stats().counter(prefix + "downstream_flow_control_paused_reading_total")),
      downstream_flow_control_resumed_reading_total(
          moe::stats().counter(prefix + "downstream_flow_control_resumed_reading_total")) {
  for (int i = 0; i < 5; i++) {
    downstream_rq_xx[i] = &moe::stats().counter(prefix + "downstream_rq_" + std::to_string(i + 1) + "xx");
  }
}

ConnectionManagerListenerStats::ConnectionManagerListenerStats(const std::string& prefix)
    : downstream_rq_completed(moe::stats().counter(prefix + "downstream_rq_completed")) {
  for (int i = 0; i < 5; i++) {
    downstream_rq_xx[i] = &moe::stats().counter(prefix + "downstream_rq_" + std::to_string(i + 1) + "xx");
  }
}

// ---------------------------------------------------------------------------------------------
// Factory: runs on the main thread at startup.
// ---------------------------------------------------------------------------------------------

HttpConnectionManagerFactoryImpl::HttpConnectionManagerFactoryImpl(const bootstrap::Listener& config,
                                                                   Server& server)
    : config_(config), server_(server),
      stats_("http." + config.hcm.stat_prefix + ".") {
  // Envoy's filter stat prefix is the HCM's "http.<stat_prefix>." (config.cc:33 adds "golang.").
  const std::string filter_stats_prefix = "http." + config_.hcm.stat_prefix + ".";
  for (auto& hf : config_.hcm.http_filters) {
    FilterFactory ff{hf.type, nullptr};
    if (hf.type == bootstrap::HttpFilter::Type::Golang) {
      ff.golang = std::make_shared<golang::FilterConfig>(hf, filter_stats_prefix, server.concurrency());
      // Throws (host exits 1) when Go rejects the config, as Envoy rejects it.
      ff.golang->newGoPluginConfig();
    }
    filters_.push_back(std::move(ff));
  }
  // Opened now: a file that cannot be opened rejects the config ("unable to open file").
  for (auto& al : config_.hcm.access_log) access_logs_.push_back(std::make_unique<AccessLogInstance>(al));
  // After the filters: per-route golang configs are parsed for libraries already loaded.
  if (config_.hcm.rds) {
    route_provider_ = rdsRouteConfigProvider(*config_.hcm.rds, filter_stats_prefix);
  } else {
    route_provider_ = staticRouteConfigProvider(config_.hcm.route_config);
  }
}

// Envoy names a listener's stats scope after its address, ':' replaced ("listener.127.0.0.1_10000.";
// Address::Instance::asString and the listener's stat prefix, listener_impl.cc).
void HttpConnectionManagerFactoryImpl::setListenerAddress(const std::string& ip, uint16_t port) {
  std::string addr = ip.find(':') != std::string::npos ? "[" + ip + "]:" + std::to_string(port) : ip + ":" + std::to_string(port);
  for (char& c : addr) {
    if (c == ':') c = '_';
  }
  listener_stats_ = std::make_unique<ConnectionManagerListenerStats>("listener." + addr + ".http." +
                                                                     config_.hcm.stat_prefix + ".");
}

std::unique_ptr<ServerConnectionCallbacks>
HttpConnectionManagerFactoryImpl::createConnectionManager(Dispatcher& worker,
                                                          const ConnectionInfo& conn) {
  return std::make_unique<ConnectionManager>(
      std::static_pointer_cast<HttpConnectionManagerFactoryImpl>(shared_from_this()), worker, conn);
}

void HttpConnectionManagerFactoryImpl::createFilterChain(FilterManager& fm, uint32_t worker_id) const {
  for (auto& ff : filters_) {
    if (ff.type == bootstrap::HttpFilter::Type::Golang) {
      // Added as a stream filter and as an access-log handler (config.cc:48-50).
      auto f = std::make_shared<golang::Filter>(ff.golang, worker_id);
      fm.addStreamFilter(f);
      fm.addAccessLogHandler(f);
    } else {
      fm.addStreamDecoderFilter(std::make_shared<RouterFilter>(server_.clusterManager()));
    }
  }
  for (auto& al : access_logs_) fm.addConnectionManagerAccessLog(al.get());
}

// ---------------------------------------------------------------------------------------------
// ConnectionManager: one per downstream connection, on its worker thread.
// ---------------------------------------------------------------------------------------------

ConnectionManager::ConnectionManager(std::shared_ptr<HttpConnectionManagerFactoryImpl> factory, Dispatcher& worker,
                                     const ConnectionInfo& conn)
    : factory_(std::move(factory)), worker_(worker),
      worker_id_(workerIdFromName(worker.name(), worker.workerId())), conn_(conn) {
  // conn_manager_impl.cc: a new HTTP/1 connection.
  auto& st = factory_->stats();
  st.downstream_cx_total.inc();
  st.downstream_cx_http1_total.inc();
  st.downstream_cx_active.add(1);
  st.downstream_cx_http1_active.add(1);
}

ConnectionManager::~ConnectionManager() {
  // A stream still active when the connection object goes is reset now.
  onConnectionClose();
  auto& st = factory_->stats();
  st.downstream_cx_active.sub(1);
  st.downstream_cx_http1_active.sub(1);
  st.downstream_cx_destroy.inc();
  st.downstream_cx_length_ms.record(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - created_).count()));
}

RequestDecoder& ConnectionManager::newStream(ResponseEncoder& encoder) {
  streams_.push_back(std::make_unique<ActiveStream>(*this, encoder, g_next_stream_id.fetch_add(1)));
  return *streams_.back();
}

void ConnectionManager::onConnectionClose() {
  // Streams still open are reset by the codec (onResetStream) before this call; be defensive.
  std::vector<ActiveStream*> open;
  for (auto& s : streams_) {
    if (!s->ended()) open.push_back(s.get());
  }
  for (auto* s : open) s->onResetStream(StreamResetReason::ConnectionTermination);
}

void ConnectionManager::removeStream(ActiveStream* stream) {
  for (auto it = streams_.begin(); it != streams_.end(); ++it) {
    if (it->get() == stream) {
      ActiveStream* raw = it->release();
      streams_.erase(it);
      // Deleted after the current event: we are inside its call stack.
      worker_.deferredDelete([raw] { delete raw; });
      return;
    }
  }
}

void ConnectionManager::onRemoteCloseWithActiveStream() {
  if (counted_remote_close_) return;
  counted_remote_close_ = true;
  factory_->stats().downstream_cx_destroy_remote_active_rq.inc();
}

// ---------------------------------------------------------------------------------------------
// ActiveStream
// ---------------------------------------------------------------------------------------------

ActiveStream::ActiveStream(ConnectionManager& parent, ResponseEncoder& encoder, uint64_t id)
    : parent_(parent), encoder_(&encoder),
      filter_manager_(*this, parent.dispatcher(), info_,
                      parent.factory().config().per_connection_buffer_limit_bytes, id) {
  info_.downstream = encoder.connectionInfo();
  info_.protocol = encoder.protocol();
  g_active_streams.fetch_add(1);
  parent_.factory().stats().downstream_rq_total.inc();
  parent_.factory().stats().downstream_rq_http1_total.inc();
  parent_.factory().stats().downstream_rq_active.add(1);
  // The codec creates the stream on the request's first byte; the filter chain is created
  // with the headers (conn_manager_impl.cc decodeHeaders -> createDownstreamFilterChain), so a
  // stream that times out before its headers complete runs no filter.
  const auto& hcm = parent_.factory().config().hcm;
  filter_manager_.setFlushAccessLogOnNewRequest(hcm.flush_access_log_on_new_request);
  if (hcm.stream_idle_timeout_ms > 0) {
    idle_timer_ = parent_.dispatcher().createTimer([this] { onIdleTimeout(); });
    resetIdleTimer();
  }
  if (hcm.request_timeout_ms > 0) {
    request_timer_ = parent_.dispatcher().createTimer([this] { onRequestTimeout(); });
    request_timer_->enableTimer(std::chrono::milliseconds(hcm.request_timeout_ms));
  }
  if (hcm.request_headers_timeout_ms > 0) {
    // conn_manager_impl.cc:983-989: armed at stream creation, disarmed by decodeHeaders.
    request_header_timer_ = parent_.dispatcher().createTimer([this] { onRequestHeaderTimeout(); });
    request_header_timer_->enableTimer(std::chrono::milliseconds(hcm.request_headers_timeout_ms));
  }
  if (hcm.access_log_flush_interval_ms > 0) {
    // conn_manager_impl.cc:999-1017: periodic log until the stream completes (StreamInfo's
    // requestComplete is set at the stream's end).
    auto interval = std::chrono::milliseconds(hcm.access_log_flush_interval_ms);
    access_log_flush_timer_ = parent_.dispatcher().createTimer([this, interval] {
      if (ended_) return;
      filter_manager_.log(AccessLogType::DownstreamPeriodic);
      access_log_flush_timer_->enableTimer(interval);
    });
    access_log_flush_timer_->enableTimer(interval);
  }
}

ActiveStream::~ActiveStream() {
  // Normally ended already; a stream torn down with its connection ends here.
  if (!ended_) {
    filter_manager_.onDownstreamReset();
    encoder_ = nullptr;
    ended_ = true;
    parent_.factory().stats().downstream_rq_active.sub(1);
    if (successful_upgrade_) parent_.factory().stats().downstream_cx_upgrades_active.sub(1);
    g_active_streams.fetch_sub(1);
    filter_manager_.onStreamComplete();
    filter_manager_.log(AccessLogType::DownstreamEnd);
    filter_manager_.destroyFilters();
  }
}

// conn_manager_impl.cc decodeHeaders + ConnectionManagerUtility::mutateRequestHeaders (the
// defaults: no trusted hops, so x-forwarded-proto is overwritten; x-request-id generated when
// absent).
void ActiveStream::decodeHeaders(HeaderMapPtr headers, bool end_stream) {
  if (request_header_timer_) request_header_timer_->disableTimer();
  if (encoder_) info_.request_wire_bytes = encoder_->requestWireBytes();
  // conn_manager_impl.cc:1494-1530: before the request headers are mutated and the route is
  // chosen ("path sanitization should happen before any path access").
  if (!normalizeRequestTarget(headers, end_stream)) return;
  if (const std::string* id = headers->get("x-request-id"); id == nullptr || id->empty()) {
    headers->setOnly("x-request-id", uuid4());
  }
  info_.request_id = *headers->get("x-request-id");
  headers->setOnly("x-forwarded-proto", "http");
  // Hop-by-hop headers never reach the filters (conn_manager_utility.cc:132-145); connection
  // and upgrade stay on an upgrade request (the codec kept them only there): the filter
  // manager lets it through or refuses it with 403 after the upgrade_configs.
  if (!isUpgradeRequest(*headers)) {
    headers->remove("connection");
    headers->remove("upgrade");
  }
  headers->remove("keep-alive");
  headers->remove("proxy-connection");
  headers->remove("transfer-encoding");
  parent_.factory().createFilterChain(filter_manager_, parent_.workerId());
  resetIdleTimer();
  // conn_manager_impl.cc decodeHeaders: snapRouteConfig() before the filters run.
  if (!route_config_) route_config_ = parent_.factory().routeConfig();
  filter_manager_.decodeHeaders(std::move(headers), end_stream);
  maybeDisarmRequestTimer();
}

bool ActiveStream::normalizeRequestTarget(HeaderMapPtr& headers, bool end_stream) {
  const bootstrap::HttpConnectionManager& hcm = parent_.factory().config().hcm;
  ConnectionManagerStats& stats = parent_.factory().stats();
  if (const std::string* p = headers->get(":path")) { // CONNECT has none
    // Most listeners rewrite nothing: then only the fragment check runs, on the header itself,
    // and the path is neither copied nor set again.
    const bool rewrites = rewritesPath(hcm);
    std::string path;
    NormalizePathAction action;
    if (rewrites) {
      path = *p;
      action = maybeNormalizePath(path, hcm);
    } else {
      action = p->find('#') == std::string::npos ? NormalizePathAction::Continue : NormalizePathAction::Reject;
    }
    if (action == NormalizePathAction::Redirect && hasGrpcContentType(*headers)) {
      action = NormalizePathAction::Reject; // gRPC clients do not follow redirects
    }
    if (action == NormalizePathAction::Reject) {
      stats.downstream_rq_failed_path_normalization.inc();
      filter_manager_.refuseRequest(std::move(headers), end_stream, 400, nullptr, "path_normalization_failed");
      return false;
    }
    if (rewrites && path != *p) headers->setOnly(":path", path);
    if (action == NormalizePathAction::Redirect) {
      stats.downstream_rq_redirected_with_normalized_path.inc();
      filter_manager_.refuseRequest(std::move(headers), end_stream, 307,
                                    [path](HeaderMap& h) { h.addCopy("location", path); },
                                    "path_normalization_failed");
      return false;
    }
  }
  if (const std::string* a = headers->get(":authority");
      a && (hcm.strip_trailing_host_dot || hcm.strip_port != bootstrap::HttpConnectionManager::StripPort::None)) {
    std::string host = *a;
    maybeNormalizeHost(host, hcm, parent_.connection().local_port);
    if (host != *a) headers->setOnly(":authority", host);
  }
  return true;
}

void ActiveStream::decodeData(Buffer& data, bool end_stream) {
  if (ended_) return;
  resetIdleTimer();
  filter_manager_.decodeData(data, end_stream);
  maybeDisarmRequestTimer();
}

void ActiveStream::decodeTrailers(HeaderMapPtr trailers) {
  if (ended_) return;
  resetIdleTimer();
  filter_manager_.decodeTrailers(std::move(trailers));
  maybeDisarmRequestTimer();
}

void ActiveStream::resetIdleTimer() {
  if (idle_timer_ && !ended_) {
    idle_timer_->enableTimer(std::chrono::milliseconds(parent_.factory().config().hcm.stream_idle_timeout_ms));
  }
}

void ActiveStream::maybeDisarmRequestTimer() {
  if (request_timer_ && !ended_ && filter_manager_.remoteDecodeComplete()) request_timer_->disableTimer();
}

// conn_manager_impl.cc onIdleTimeout: 408 "stream timeout" before the response started, else
// a reset. (Http::Utility::maybeRequestTimeoutCode: 504 instead once the whole request was
// received.)
void ActiveStream::onIdleTimeout() {
  if (ended_) return;
  parent_.factory().stats().downstream_rq_idle_timeout.inc();
  if (filter_manager_.responseHeadersEncoded()) {
    resetDownstream();
    return;
  }
  filter_manager_.sendLocalReply(408, "stream timeout", nullptr, "stream_idle_timeout");
}

// conn_manager_impl.cc onRequestTimeout: 408 "request timeout".
void ActiveStream::onRequestTimeout() {
  if (ended_) return;
  parent_.factory().stats().downstream_rq_timeout.inc();
  if (filter_manager_.responseHeadersEncoded()) {
    resetDownstream();
    return;
  }
  filter_manager_.sendLocalReply(408, "request timeout", nullptr, "request_overall_timeout");
}

// conn_manager_impl.cc:1079-1085 onRequestHeaderTimeout: 408 "request header timeout". Only
// armed until the headers are decoded, so no filter exists yet and nothing was encoded.
void ActiveStream::onRequestHeaderTimeout() {
  if (ended_) return;
  parent_.factory().stats().downstream_rq_header_timeout.inc();
  filter_manager_.sendLocalReply(408, "request header timeout", nullptr, "request_header_timeout");
}

// The downstream went away mid-stream (client abort): the golang filter sees onDestroy with
// Terminate when Go was still busy.
void ActiveStream::onResetStream(StreamResetReason reason) {
  if (ended_) return;
  if (reason == StreamResetReason::ConnectionTermination) parent_.onRemoteCloseWithActiveStream();
  encoder_ = nullptr;
  filter_manager_.onDownstreamReset();
  endStream();
}

void ActiveStream::encodeHeadersToCodec(HeaderMap& headers, bool end_stream) {
  if (!encoder_) return;
  // conn_manager_impl.cc chargeStats: the HCM's and the listener's response stats.
  int status = headers.status();
  parent_.factory().stats().downstream_rq_completed.inc();
  ConnectionManagerListenerStats* ls = parent_.factory().listenerStats();
  if (ls) ls->downstream_rq_completed.inc();
  if (status >= 100 && status < 600) {
    parent_.factory().stats().downstream_rq_xx[status / 100 - 1]->inc();
    if (ls) ls->downstream_rq_xx[status / 100 - 1]->inc();
  }
  // Draining (SIGTERM), DrainConnectionUponCompletion, or a response that starts before the
  // request ended (HTTP/1 then closes: conn_manager_impl.cc ActiveStream::encodeHeaders,
  // !remoteDecodeComplete -> DrainState::Closing): "connection: close" and close after.
  if (!filter_manager_.remoteDecodeComplete()) {
    parent_.factory().stats().downstream_rq_response_before_rq_complete.inc();
  }
  // A listener version that was replaced or removed drains its connections
  // (conn_manager_impl.cc encodeHeaders: drain_close_.drainClose() -> startDrainSequence).
  bool drain_close = parent_.factory().drainClose();
  if (drain_close) parent_.factory().stats().downstream_cx_drain_close.inc();
  if (parent_.factory().server().draining() || info_.drain_connection_upon_completion ||
      !filter_manager_.remoteDecodeComplete() || drain_close) {
    encoder_->setCloseAfterResponse();
  }
  // ActiveStream::encodeHeaders (conn_manager_impl.cc:1917-1935): a date header when absent, the
  // server header overwritten (server_header_transformation OVERWRITE, server_name "envoy").
  // After the filters: Go never sees these two.
  if (headers.get("date") == nullptr) headers.addCopy("date", httpDate());
  headers.setOnly("server", "envoy");
  info_.response_header_bytes = headers.byteSize();
  resetIdleTimer();
  ResponseEncoder* enc = encoder_;
  if (end_stream) encoder_ = nullptr; // the codec may free the encoder once the response ends
  if (end_stream) info_.last_downstream_tx = std::chrono::steady_clock::now();
  enc->encodeHeaders(headers, end_stream);
  if (end_stream) endStream();
}

void ActiveStream::encodeDataToCodec(Buffer& data, bool end_stream) {
  if (!encoder_) return;
  resetIdleTimer();
  ResponseEncoder* enc = encoder_;
  if (end_stream) encoder_ = nullptr;
  if (end_stream) info_.last_downstream_tx = std::chrono::steady_clock::now();
  enc->encodeData(data, end_stream);
  if (end_stream) endStream();
}

void ActiveStream::encodeTrailersToCodec(HeaderMap& trailers) {
  if (!encoder_) return;
  ResponseEncoder* enc = encoder_;
  encoder_ = nullptr;
  info_.last_downstream_tx = std::chrono::steady_clock::now();
  enc->encodeTrailers(trailers);
  endStream();
}

void ActiveStream::resetDownstream() {
  if (ended_) return;
  ResponseEncoder* enc = encoder_;
  encoder_ = nullptr;
  filter_manager_.onDownstreamReset();
  // HTTP/1 has no stream reset: the codec closes the connection and does not call back.
  if (enc) enc->resetStream();
  endStream();
}

MatchedRouteConstSharedPtr ActiveStream::matchRoute(const HeaderMap& request_headers) {
  if (!route_config_) route_config_ = parent_.factory().routeConfig();
  if (!route_config_) return nullptr; // an RDS table that never loaded: no route (404)
  return route_config_->table().route(request_headers, route_config_);
}

bool ActiveStream::clusterExists(const std::string& name) {
  return parent_.factory().server().clusterManager().get(name) != nullptr;
}

void ActiveStream::onUpgradeRejected() { parent_.factory().stats().downstream_rq_ws_on_non_ws_route.inc(); }

// http_connection_manager/config.cc:867-897 createUpgradeFilterChain: a route entry for the
// type decides (false refuses, true allows whatever the connection manager says); otherwise
// the connection manager's entry, which must exist and be enabled. Types compare
// case-insensitively (findUpgradeCaseInsensitive / findUpgradeBoolCaseInsensitive).
bool ActiveStream::upgradeAllowed(std::string_view type, const bootstrap::RouteAction* route) {
  if (route) {
    for (const auto& u : route->upgrade_configs) {
      if (iequals(u.upgrade_type, type)) return u.enabled;
    }
  }
  for (const auto& u : parent_.factory().config().hcm.upgrade_configs) {
    if (iequals(u.upgrade_type, type)) return u.enabled;
  }
  return false;
}

// conn_manager_impl.cc:1565-1569: counted when the upgrade filter chain is created (before the
// upstream answers), active until the stream ends (conn_manager_impl.cc:1047-1049).
void ActiveStream::onUpgradeAccepted() {
  if (successful_upgrade_) return;
  successful_upgrade_ = true;
  parent_.factory().stats().downstream_cx_upgrades_total.inc();
  parent_.factory().stats().downstream_cx_upgrades_active.add(1);
}

// conn_manager_impl.cc:2085-2106 onDecoderFilterAbove/BelowWriteBufferLowWatermark.
void ActiveStream::readDisableDownstream(bool disable) {
  if (encoder_) encoder_->readDisable(disable);
  (disable ? parent_.factory().stats().downstream_flow_control_paused_reading_total
           : parent_.factory().stats().downstream_flow_control_resumed_reading_total)
      .inc();
}

// The downstream connection's write buffer crossed a watermark: the filter manager's
// downstream watermark callbacks (the router pauses or resumes reading the upstream).
void ActiveStream::onAboveWriteBufferHighWatermark() {
  if (!ended_) filter_manager_.callHighWatermarkCallbacks();
}
void ActiveStream::onBelowWriteBufferLowWatermark() {
  if (!ended_) filter_manager_.callLowWatermarkCallbacks();
}

// Stream end, conn_manager_impl.cc:369-387: onStreamComplete, access log, onDestroy; then the
// object is deleted after the current event.
void ActiveStream::endStream() {
  if (ended_) return;
  ended_ = true;
  if (access_log_flush_timer_) access_log_flush_timer_->disableTimer();
  if (idle_timer_) idle_timer_->disableTimer();
  if (request_timer_) request_timer_->disableTimer();
  if (request_header_timer_) request_header_timer_->disableTimer();
  info_.completed = std::chrono::steady_clock::now();
  parent_.factory().stats().downstream_rq_active.sub(1);
  if (successful_upgrade_) parent_.factory().stats().downstream_cx_upgrades_active.sub(1);
  // completeRequest: downstream_rq_time from the stream's start.
  parent_.factory().stats().downstream_rq_time.record(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(*info_.completed - info_.start_steady).count()));
  g_active_streams.fetch_sub(1);
  filter_manager_.onStreamComplete();
  filter_manager_.log(AccessLogType::DownstreamEnd);
  filter_manager_.destroyFilters();
  parent_.removeStream(this);
}

} // namespace moe
