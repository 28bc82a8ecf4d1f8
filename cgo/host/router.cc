#include "router.h"

#include <algorithm>
#include <cstdlib>

#include "http1_codec.h"
#include "logger.h"
#include "stats.h"

namespace moe {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t msSince(Clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

// Http::Utility::resetReasonToString for the reasons the upstream side reports.
std::string resetReasonString(RetryState::Reset reason) {
  switch (reason) {
  case RetryState::Reset::ConnectionFailure: return "remote connection failure";
  case RetryState::Reset::ConnectionTimeout: return "connection timeout";
  case RetryState::Reset::ConnectionTermination: return "connection termination";
  case RetryState::Reset::ProtocolError: return "protocol error";
  case RetryState::Reset::LocalReset: return "local reset";
  }
  return "";
}

RetryState::Reset resetKind(UpstreamResetReason reason, const std::string& details) {
  switch (reason) {
  case UpstreamResetReason::ConnectionFailure:
    return details.find("timeout") != std::string::npos ? RetryState::Reset::ConnectionTimeout
                                                         : RetryState::Reset::ConnectionFailure;
  case UpstreamResetReason::ConnectionTermination: return RetryState::Reset::ConnectionTermination;
  case UpstreamResetReason::ProtocolError: return RetryState::Reset::ProtocolError;
  case UpstreamResetReason::LocalReset: return RetryState::Reset::LocalReset;
  }
  return RetryState::Reset::ConnectionTermination;
}

// Filter::streamResetReasonToResponseFlag.
const char* resetFlag(RetryState::Reset reason) {
  switch (reason) {
  case RetryState::Reset::ConnectionFailure:
  case RetryState::Reset::ConnectionTimeout: return "UF";
  case RetryState::Reset::ConnectionTermination: return "UC";
  case RetryState::Reset::LocalReset: return "LR";
  case RetryState::Reset::ProtocolError: return "UPE";
  }
  return "UC";
}

std::string replaceSpaces(std::string s) {
  std::replace(s.begin(), s.end(), ' ', '_');
  return s;
}

bool parseMs(const std::string& s, uint64_t* out) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || end == s.c_str() || *end != '\0') return false;
  *out = v;
  return true;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Attempt (UpstreamRequest)
// ---------------------------------------------------------------------------------------------

RouterFilter::Attempt::~Attempt() { reset(); }

void RouterFilter::Attempt::reset() {
  per_try_timer_.reset();
  releaseActive();
  releaseRequest(true);
}

void RouterFilter::Attempt::releaseRequest(bool reset) {
  // clearRequestEncoder: before the encoder goes, unsubscribe from the downstream's watermarks.
  if (watermarks_registered_) {
    watermarks_registered_ = false;
    parent_.callbacks_->removeDownstreamWatermarkCallbacks(*this);
  }
  deferred_read_disabling_count_ = 0;
  for (; downstream_data_disabled_ > 0; --downstream_data_disabled_) {
    parent_.callbacks_->onDecoderFilterBelowWriteBufferLowWatermark();
    clusterCounter("upstream_flow_control_drained_total");
  }
  if (request_) {
    UpstreamRequest* raw = request_.release();
    if (reset) raw->reset();
    // Deleted after the current event: we may be inside one of its callbacks.
    parent_.callbacks_->dispatcher().deferredDelete([raw] { delete raw; });
  }
}

void RouterFilter::Attempt::clusterCounter(const char* name) {
  stats().counter(parent_.cluster_->stats().prefix + name).inc();
}

void RouterFilter::Attempt::readDisableOrDefer(bool disable) {
  if (!request_) return;
  if (disable) {
    if (parent_.downstream_response_started_) {
      // The downstream connection is overrun: pause reading the upstream (reference-counted
      // by the connection).
      clusterCounter("upstream_flow_control_paused_reading_total");
      request_->readDisable(true);
    } else {
      ++deferred_read_disabling_count_;
    }
    return;
  }
  // One source of blockage has room again: cancel a deferred pause, or resume reading.
  if (deferred_read_disabling_count_ > 0) {
    --deferred_read_disabling_count_;
    return;
  }
  clusterCounter("upstream_flow_control_resumed_reading_total");
  request_->readDisable(false);
}

void RouterFilter::Attempt::maybeHandleDeferredReadDisable() {
  // readDisable counts, so it is called with true as often as it will be called with false.
  for (; deferred_read_disabling_count_ > 0 && request_; --deferred_read_disabling_count_) {
    clusterCounter("upstream_flow_control_paused_reading_total");
    request_->readDisable(true);
  }
}

void RouterFilter::Attempt::onUpstreamAboveWriteBufferHighWatermark() {
  if (parent_.destroyed_ || !request_) return;
  clusterCounter("upstream_flow_control_backed_up_total");
  ++downstream_data_disabled_;
  parent_.callbacks_->onDecoderFilterAboveWriteBufferHighWatermark();
}

void RouterFilter::Attempt::onUpstreamBelowWriteBufferLowWatermark() {
  if (parent_.destroyed_ || downstream_data_disabled_ == 0) return;
  clusterCounter("upstream_flow_control_drained_total");
  --downstream_data_disabled_;
  parent_.callbacks_->onDecoderFilterBelowWriteBufferLowWatermark();
}

// conn_pool_base.cc onStreamClosed: the request leaves its connection.
void RouterFilter::Attempt::releaseActive() {
  if (host_stats_ == nullptr) return;
  host_stats_->rq_active.sub(1);
  parent_.cluster_->stats().upstream_rq_active.sub(1);
  host_stats_ = nullptr;
}

// UpstreamRequest::onPoolReady.
void RouterFilter::Attempt::onPoolReady(const std::string& host) {
  pool_ready_ = true;
  host_ = host;
  StreamInfo& info = parent_.callbacks_->streamInfo();
  info.upstream_remote_address = host;
  info.upstream_hosts_attempted.push_back(host);
  // conn_pool_base.cc attachStreamToClient: upstream_rq_total counts requests bound to an
  // upstream connection (so not those whose connect failed).
  ClusterStats& cs = parent_.cluster_->stats();
  cs.upstream_rq_total.inc();
  cs.upstream_rq_active.add(1);
  host_stats_ = &cs.host(host);
  host_stats_->rq_total.inc();
  host_stats_->rq_active.add(1);
  // upstream_request.cc:427-436: a websocket upgrade's per-try timeout runs from the start,
  // as the request never ends (disabled by the 101).
  if ((parent_.downstream_end_stream_ || parent_.websocket_paused_) && !per_try_timer_) {
    setupPerTryTimeout();
  } else {
    create_per_try_timeout_on_request_complete_ = true;
  }
  // upstream_request.cc:708-711: the downstream's watermarks now pause this upstream; a high
  // watermark in force is reported at once.
  if (!watermarks_registered_ && request_) {
    watermarks_registered_ = true;
    parent_.callbacks_->addDownstreamWatermarkCallbacks(*this);
  }
}

void RouterFilter::Attempt::setupPerTryTimeout() {
  if (per_try_timer_ || parent_.per_try_timeout_ms_ == 0) return;
  per_try_timer_ = parent_.callbacks_->dispatcher().createTimer([this] { parent_.onPerTryTimeout(*this); });
  per_try_timer_->enableTimer(std::chrono::milliseconds(parent_.per_try_timeout_ms_));
}

void RouterFilter::Attempt::onUpstreamHeaders(HeaderMapPtr headers, bool end_stream) {
  // UpstreamRequest::decodeHeaders / decode1xxHeaders: before the router sees the headers.
  maybeHandleDeferredReadDisable();
  parent_.onAttemptHeaders(*this, std::move(headers), end_stream);
}
void RouterFilter::Attempt::onUpstreamData(Buffer& data, bool end_stream) { parent_.onAttemptData(*this, data, end_stream); }
void RouterFilter::Attempt::onUpstreamTrailers(HeaderMapPtr trailers) { parent_.onAttemptTrailers(*this, std::move(trailers)); }
void RouterFilter::Attempt::onUpstreamReset(UpstreamResetReason reason, const std::string& details) {
  // No more callbacks follow; the request object can go.
  parent_.onAttemptReset(*this, reason, details);
}

// ---------------------------------------------------------------------------------------------
// RouterFilter
// ---------------------------------------------------------------------------------------------

RouterFilter::~RouterFilter() { releaseAttempt(true); }

// Http::HeaderUtility::isEnvoyInternalRequest: x-envoy-internal: true.
bool RouterFilter::internalRequest() const {
  const HeaderMap* h = callbacks_->requestHeaders();
  const std::string* v = h ? h->get("x-envoy-internal") : nullptr;
  return v != nullptr && *v == "true";
}

void RouterFilter::modifyResponseHeaders(HeaderMap& headers) const {
  if (!route_ || attempt_count_ == 0 || !route_->virtual_host->include_attempt_count_in_response) return;
  headers.setOnly("x-envoy-attempt-count", std::to_string(attempt_count_));
}

void RouterFilter::sendLocalReply(int code, const std::string& body, const std::string& details) {
  callbacks_->sendLocalReply(code, body, [this](HeaderMap& h) { modifyResponseHeaders(h); }, details);
}

// FilterUtility::setTimeoutHeaders: x-envoy-expected-rq-timeout-ms is the per-try timeout (or
// the global one), capped by what is left of the global timeout.
void RouterFilter::setTimeoutHeaders(uint64_t elapsed_ms, HeaderMap& headers) {
  uint64_t expected = per_try_timeout_ms_ != 0 ? per_try_timeout_ms_ : global_timeout_ms_;
  if (expected == 0) return;
  if (global_timeout_ms_ > 0) {
    expected = elapsed_ms >= global_timeout_ms_ ? 1 : std::min(expected, global_timeout_ms_ - elapsed_ms);
  }
  headers.setOnly("x-envoy-expected-rq-timeout-ms", std::to_string(expected));
}

FilterHeadersStatus RouterFilter::decodeHeaders(HeaderMap& headers, bool end_stream) {
  StreamInfo& info = callbacks_->streamInfo();
  downstream_headers_ = &headers;
  route_ = callbacks_->route();
  if (!route_) {
    // router.cc decodeHeaders: no route -> 404 with an empty body.
    info.addResponseFlag("NR");
    callbacks_->sendLocalReply(404, "", nullptr, "route_not_found");
    return FilterHeadersStatus::StopIteration;
  }
  if (route_->route->direct_response) {
    // The direct response gets the route's response header lists (finalizeResponseHeaders).
    const auto& dr = *route_->route->direct_response;
    MatchedRouteConstSharedPtr route = route_;
    callbacks_->sendLocalReply(
        static_cast<int>(dr.status), dr.body,
        [this, route](HeaderMap& h) {
          FormatContext ctx;
          ctx.request_headers = downstream_headers_;
          ctx.response_headers = &h;
          route->finalizeResponseHeaders(h, ctx, callbacks_->streamInfo());
        },
        "direct_response");
    return FilterHeadersStatus::StopIteration;
  }
  const bootstrap::RouteAction& action = *route_->route->route;
  cluster_ = route_->cluster_name.empty() ? nullptr : cm_.get(route_->cluster_name);
  if (cluster_ == nullptr) {
    // router.cc:566-575: unknown cluster (a cluster_header naming no cluster, too) -> the route's
    // cluster_not_found_response_code (503 by default), empty body, flag NC.
    info.addResponseFlag("NC");
    sendLocalReply(static_cast<int>(action.cluster_not_found_response_code), "", "cluster_not_found");
    return FilterHeadersStatus::StopIteration;
  }
  info.upstream_cluster = cluster_->name();

  // Increment the attempt count from 0 to 1 at the first upstream request.
  attempt_count_ = 1;
  info.attempt_count = attempt_count_;

  // FilterUtility::finalTimeout: the route's timeout (0 disables it), overridden by
  // x-envoy-upstream-rq-timeout-ms; the per-try timeout from the retry policy, overridden by
  // x-envoy-upstream-rq-per-try-timeout-ms, ignored when not below the global one. The
  // x-envoy-* request headers are trusted (no use_remote_address) and consumed.
  global_timeout_ms_ = action.timeout_ms;
  if (const std::string* hv = headers.get("x-envoy-upstream-rq-timeout-ms")) {
    uint64_t v;
    if (parseMs(*hv, &v)) global_timeout_ms_ = v;
    headers.remove("x-envoy-upstream-rq-timeout-ms");
  }
  per_try_timeout_ms_ = action.retry_policy ? action.retry_policy->per_try_timeout_ms : 0;
  if (const std::string* hv = headers.get("x-envoy-upstream-rq-per-try-timeout-ms")) {
    uint64_t v;
    if (parseMs(*hv, &v)) per_try_timeout_ms_ = v;
    headers.remove("x-envoy-upstream-rq-per-try-timeout-ms");
  }
  if (per_try_timeout_ms_ >= global_timeout_ms_ && global_timeout_ms_ != 0) per_try_timeout_ms_ = 0;
  setTimeoutHeaders(0, headers);

  // x-envoy-attempt-count before the header lists, so they can refer to it.
  include_attempt_count_in_request_ = route_->virtual_host->include_request_attempt_count;
  if (include_attempt_count_in_request_) headers.setOnly("x-envoy-attempt-count", std::to_string(attempt_count_));

  // RouteEntryImplBase::finalizeRequestHeaders: the header lists first (host and path rewrites
  // may depend on them), then the host rewrite, then the path rewrite.
  {
    FormatContext ctx;
    ctx.request_headers = &headers;
    route_->finalizeRequestHeaders(headers, ctx, info);
  }
  if (action.host_rewrite_literal) headers.setOnly(":authority", *action.host_rewrite_literal);
  // Route rewrites keep the original path in x-envoy-original-path.
  if (action.prefix_rewrite && route_->route->match.kind == bootstrap::RouteMatch::Kind::Prefix) {
    std::string path(headers.path());
    const std::string& prefix = route_->route->match.value;
    if (path.size() >= prefix.size()) {
      headers.setOnly("x-envoy-original-path", path);
      headers.setOnly(":path", *action.prefix_rewrite + path.substr(prefix.size()));
    }
  } else if (action.prefix_rewrite) {
    std::string path(headers.path());
    auto q = path.find('?');
    headers.setOnly("x-envoy-original-path", path);
    headers.setOnly(":path", *action.prefix_rewrite + (q == std::string::npos ? "" : path.substr(q)));
  }

  // UpstreamCodecFilter::decodeHeaders (upstream_codec_filter.cc:63-83): the HTTP/1 request
  // encoder refuses a request a filter left with a missing :method/:path or with an invalid
  // header name or value (a Go plugin's SetHeader/SetPath with CR/LF, say): 503 with the error
  // as the body, and nothing is written upstream.
  if (std::string err = checkRequestHeadersForUpstream(headers); !err.empty()) {
    info.addResponseFlag("DPE");
    callbacks_->sendLocalReply(503, err, nullptr, "filter_removed_required_request_headers{" + replaceSpaces(err) + "}");
    return FilterHeadersStatus::StopIteration;
  }

  // An upgrade the connection manager let through (a refused one never gets here), still one
  // after the filters: a filter that adds upgrade headers to an ordinary request does not
  // make it one (its body stays framed).
  upgrade_ = callbacks_->upgradeAccepted() && isUpgradeRequest(headers);
  websocket_paused_ = upgrade_ && isWebSocketUpgradeRequest(headers);
  // continueDecodeHeaders: the retry state (which consumes the retry request headers). None
  // for an upgrade here (Envoy keeps one): its payload is not kept for a second try.
  if (!upgrade_) {
    retry_state_ = RetryState::create(action.retry_policy, headers, cluster_->stats(), callbacks_->dispatcher());
  }
  if (cluster_->endpoints().empty()) {
    // sendNoHealthyUpstreamResponse.
    info.addResponseFlag("UH");
    chargeUpstreamCode(503, nullptr);
    sendLocalReply(503, "no healthy upstream", "no_healthy_upstream");
    cleanup();
    return FilterHeadersStatus::StopIteration;
  }
  info.upstream_tx_start = Clock::now();
  startAttempt(headers, end_stream);
  if (end_stream) onRequestComplete();
  // router.cc:1290-1298 setupRouteTimeoutForWebsocketUpgrade (websocket_enable_timeout_on_
  // upgrade_response): the route timeout runs from now until the 101, since the request
  // never completes. Other upgrades have none, as in Envoy (it starts at the request's end).
  if (websocket_paused_ && attempt_ && global_timeout_ms_ > 0 && !response_timer_) {
    response_timer_ = callbacks_->dispatcher().createTimer([this] { onResponseTimeout(); });
    response_timer_->enableTimer(std::chrono::milliseconds(global_timeout_ms_));
  }
  return FilterHeadersStatus::StopIteration;
}

void RouterFilter::startAttempt(HeaderMap& headers, bool end_stream) {
  StreamInfo& info = callbacks_->streamInfo();
  std::optional<std::string> override_host;
  bool override_strict = false;
  if (info.upstream_override_host) {
    override_host = info.upstream_override_host->first;
    override_strict = info.upstream_override_host->second;
  }
  attempt_ = std::make_unique<Attempt>(*this);
  Attempt* a = attempt_.get();
  a->request_ = cluster_->newRequest(callbacks_->dispatcher(), *a, override_host, override_strict, upgrade_);
  if (!a->request_) {
    attempt_.reset();
    info.addResponseFlag("UH");
    chargeUpstreamCode(503, nullptr);
    sendLocalReply(503, "no healthy upstream", "no_healthy_upstream");
    cleanup();
    return;
  }
  a->request_->encodeHeaders(headers, end_stream);
  if (end_stream) a->encode_complete_ = true;
}

FilterDataStatus RouterFilter::decodeData(Buffer& data, bool end_stream) {
  if (websocket_paused_ && attempt_) {
    // Payload before the upstream's 101 waits (upstream_codec_filter.cc:92); above the buffer
    // limit the downstream stops being read until it is sent (Envoy's watermark on it).
    websocket_pending_.move(data);
    if (!websocket_pending_above_limit_ && websocket_pending_.length() > callbacks_->bufferLimit()) {
      websocket_pending_above_limit_ = true;
      callbacks_->onDecoderFilterAboveWriteBufferHighWatermark();
    }
    return FilterDataStatus::StopIterationNoBuffer;
  }
  // Keep the body for a retry while it fits the buffer limit (router.cc decodeData).
  const bool retry_enabled = retry_state_ && retry_state_->enabled();
  bool buffering = retry_enabled && !request_buffer_overflowed_;
  const Buffer* decoding = callbacks_->decodingBuffer();
  const uint64_t payload = decoding != &data ? (decoding ? decoding->length() : 0) + data.length() : data.length();
  if (buffering && payload > callbacks_->bufferLimit()) {
    MOE_LOG(Debug, "router", "[%llu] request body over the buffer limit: giving up on retries",
            static_cast<unsigned long long>(callbacks_->streamId()));
    cluster_->stats().retry_or_shadow_abandoned.inc();
    retry_state_.reset();
    buffering = false;
    request_buffer_overflowed_ = true;
    if (!attempt_) {
      // A retry was waiting and now has nothing to send.
      cleanup();
      sendLocalReply(507, "exceeded request buffer limit while retrying upstream",
                     "request_payload_exceeded_retry_buffer_limit");
      return FilterDataStatus::StopIterationNoBuffer;
    }
  }
  if (buffering) {
    if (attempt_) {
      Buffer copy(data.view());
      attempt_->request_->encodeData(copy, end_stream);
    }
    // addDecodedData: the filter manager keeps it (our buffer limit is not reached).
    callbacks_->addDecodedData(data, true);
  } else if (attempt_) {
    attempt_->request_->encodeData(data, end_stream);
    data.drainAll();
  } else {
    // Nothing kept for a retry and no upstream request left.
    data.drainAll();
    cleanup();
    sendLocalReply(503, "upstream is closed prematurely during decoding data from downstream",
                   "upstream_reset_before_response_started");
    return FilterDataStatus::StopIterationNoBuffer;
  }
  if (end_stream) {
    if (attempt_) attempt_->encode_complete_ = true;
    onRequestComplete();
  }
  return FilterDataStatus::StopIterationNoBuffer;
}

FilterTrailersStatus RouterFilter::decodeTrailers(HeaderMap& trailers) {
  downstream_trailers_ = &trailers;
  if (attempt_) {
    attempt_->request_->encodeTrailers(trailers);
    attempt_->encode_complete_ = true;
  }
  onRequestComplete();
  return FilterTrailersStatus::StopIteration;
}

// The global timeout runs from the end of the downstream request; so do per-try timeouts of an
// attempt already bound to a connection (router.cc onRequestComplete).
void RouterFilter::onRequestComplete() {
  downstream_end_stream_ = true;
  request_complete_time_ = Clock::now();
  if (!attempt_) return;
  if (global_timeout_ms_ > 0 && !response_timer_) {
    response_timer_ = callbacks_->dispatcher().createTimer([this] { onResponseTimeout(); });
    response_timer_->enableTimer(std::chrono::milliseconds(global_timeout_ms_));
  }
  if (attempt_->create_per_try_timeout_on_request_complete_) attempt_->setupPerTryTimeout();
}

void RouterFilter::chargeUpstreamCode(uint32_t code, HostStats* host) {
  cluster_->stats().chargeResponse(code, internalRequest());
  if (host != nullptr && code >= 500) host->rq_error.inc();
}

// onUpstreamAbort: the flag, then a local reply (or a reset once the response started).
void RouterFilter::onUpstreamAbort(int code, const char* flag, const std::string& body, const std::string& details) {
  callbacks_->streamInfo().addResponseFlag(flag);
  cleanup();
  sendLocalReply(code, body, details);
}

void RouterFilter::onResponseTimeout() {
  if (attempt_) {
    cluster_->stats().upstream_rq_timeout.inc();
    if (attempt_->host_stats_) attempt_->host_stats_->rq_timeout.inc();
    if (attempt_->awaiting_headers_ && !downstream_response_started_) chargeUpstreamCode(504, attempt_->host_stats_);
    releaseAttempt(true);
  }
  // router.cc onUpstreamTimeoutAbort: 504 "upstream request timeout".
  onUpstreamAbort(504, "UT", "upstream request timeout", "upstream_response_timeout");
}

// UpstreamRequest::onPerTryTimeout / Filter::onPerTryTimeoutCommon: ignored once the response
// started; otherwise the attempt is reset and retried as a local reset, or the stream gets 504.
void RouterFilter::onPerTryTimeout(Attempt& a) {
  if (downstream_response_started_) return;
  cluster_->stats().upstream_rq_per_try_timeout.inc();
  if (a.host_stats_) a.host_stats_->rq_timeout.inc();
  a.per_try_timer_.reset();
  if (a.request_) a.request_->reset();
  if (maybeRetryReset(RetryState::Reset::LocalReset, a)) return;
  chargeUpstreamCode(504, a.host_stats_);
  releaseAttempt(true);
  onUpstreamAbort(504, "UT", "upstream request timeout", "upstream_per_try_timeout");
}

void RouterFilter::updateStatsOnNoRetry(RetryState::Status status) {
  ClusterStats& cs = cluster_->stats();
  switch (status) {
  case RetryState::Status::No:
    // This request is itself a retry and needs no other: the retry succeeded.
    if (is_retry_) cs.upstream_rq_retry_success.inc();
    break;
  case RetryState::Status::NoRetryLimitExceeded: cs.upstream_rq_retry_limit_exceeded.inc(); break;
  case RetryState::Status::NoOverflow: cs.upstream_rq_retry_overflow.inc(); break;
  case RetryState::Status::Yes: break;
  }
}

// Filter::maybeRetryReset.
bool RouterFilter::maybeRetryReset(RetryState::Reset reason, Attempt& a) {
  if (downstream_response_started_ || !retry_state_ || a.retried_) return false;
  const RetryState::Status status = retry_state_->shouldRetryReset(reason, a.pool_ready_, [this] { doRetry(); });
  updateStatsOnNoRetry(status);
  if (status == RetryState::Status::Yes) {
    pending_retries_++;
    if (a.host_stats_) a.host_stats_->rq_error.inc();
    releaseAttempt(true);
    return true;
  }
  if (status == RetryState::Status::NoOverflow) callbacks_->streamInfo().addResponseFlag("UO");
  else if (status == RetryState::Status::NoRetryLimitExceeded) callbacks_->streamInfo().addResponseFlag("URX");
  return false;
}

// Filter::doRetry / continueDoRetry: the HTTP filters do not run again; the router sends the
// request headers (as they left the filter chain), the body it kept and the trailers again.
void RouterFilter::doRetry() {
  if (destroyed_) return;
  is_retry_ = true;
  attempt_count_++;
  callbacks_->streamInfo().attempt_count = attempt_count_;
  if (pending_retries_ > 0) pending_retries_--;
  ClusterStats& cs = cluster_->stats();
  cs.upstream_rq_retry.inc();
  if (retry_state_ && retry_state_->doRetryType() == RetryState::DoRetryType::Exponential) {
    cs.upstream_rq_retry_backoff_exponential.inc();
  }
  if (cluster_->endpoints().empty()) {
    callbacks_->streamInfo().addResponseFlag("UH");
    chargeUpstreamCode(503, nullptr);
    sendLocalReply(503, "no healthy upstream", "no_healthy_upstream");
    cleanup();
    return;
  }
  if (include_attempt_count_in_request_) downstream_headers_->setOnly("x-envoy-attempt-count", std::to_string(attempt_count_));
  setTimeoutHeaders(request_complete_time_ ? msSince(*request_complete_time_) : 0, *downstream_headers_);
  const Buffer* body = callbacks_->decodingBuffer();
  const bool has_body = body != nullptr && !body->empty();
  startAttempt(*downstream_headers_, !has_body && !downstream_trailers_ && downstream_end_stream_);
  if (!attempt_) return;
  if (has_body) {
    Buffer copy(body->view());
    attempt_->request_->encodeData(copy, !downstream_trailers_ && downstream_end_stream_);
  }
  if (downstream_trailers_ && attempt_) attempt_->request_->encodeTrailers(*downstream_trailers_);
  if (attempt_ && downstream_end_stream_) {
    attempt_->encode_complete_ = true;
    // The global timer runs already; the new attempt's per-try timer starts once it is bound.
    attempt_->create_per_try_timeout_on_request_complete_ = false;
  }
}

void RouterFilter::onAttemptHeaders(Attempt& a, HeaderMapPtr headers, bool end_stream) {
  // 100-continue is not forwarded (Envoy proxies it only with proxy_100_continue).
  if (headers->status() == 100) return;
  a.awaiting_headers_ = false;
  StreamInfo& info = callbacks_->streamInfo();
  const uint32_t code = static_cast<uint32_t>(headers->status());

  // A response the retry policy retries never reaches the filters (router.cc onUpstreamHeaders).
  if (retry_state_ && !a.retried_) {
    const RetryState::Status status = retry_state_->shouldRetryHeaders(*headers, [this] { doRetry(); });
    updateStatsOnNoRetry(status);
    if (status == RetryState::Status::Yes) {
      pending_retries_++;
      if (a.host_stats_) a.host_stats_->rq_error.inc();
      cluster_->stats().chargeRetryResponse(code);
      // A complete exchange leaves its connection to the pool; anything else is reset.
      releaseAttempt(!end_stream || !a.encode_complete_);
      return;
    }
    if (status == RetryState::Status::NoOverflow) info.addResponseFlag("UO");
    else if (status == RetryState::Status::NoRetryLimitExceeded) info.addResponseFlag("URX");
  }
  // Any retry timer is gone from here on.
  retry_state_.reset();
  a.per_try_timer_.reset();
  if (websocket_paused_ && onWebsocketHandshakeResponse(a, headers, end_stream)) return;

  info.first_upstream_rx = Clock::now();
  // x-envoy-upstream-service-time: the time since the whole request was received.
  if (request_complete_time_) headers->setOnly("x-envoy-upstream-service-time", std::to_string(msSince(*request_complete_time_)));
  chargeUpstreamCode(code, a.host_stats_);
  if (code < 500 && a.host_stats_) a.host_stats_->rq_success.inc();
  info.upstream_remote_address = a.host_;
  // setResponseCodeDetails / setResponseCode before the header lists, which may refer to them.
  info.response_code = code;
  info.response_code_details = "via_upstream";
  downstream_response_started_ = true;
  // finalizeResponseHeaders, then modify_headers_.
  FormatContext ctx;
  ctx.request_headers = downstream_headers_;
  ctx.response_headers = headers.get();
  route_->finalizeResponseHeaders(*headers, ctx, info);
  modifyResponseHeaders(*headers);
  if (end_stream) onUpstreamComplete(a);
  callbacks_->encodeHeaders(std::move(headers), end_stream, "via_upstream");
}

bool RouterFilter::onWebsocketHandshakeResponse(Attempt& a, HeaderMapPtr& headers, bool end_stream) {
  const int status = headers->status();
  if (status == 101) {
    // The handshake is done: the route and per-try timeouts go (router.cc:1300-1308,
    // upstream_request.cc:895-900) and the payload kept meanwhile goes up before the 101 goes
    // down (continueDecoding, then encodeHeaders).
    if (response_timer_) response_timer_->disableTimer();
    onWebsocketUpgraded();
    return false;
  }
  if (status >= 400) {
    // websocket_allow_4xx_5xx_through_filter_chain (on in 1.39): an ordinary response; the
    // dedicated connection closes after it.
    websocket_paused_ = false;
    return false;
  }
  // Any other answer (a 200, a 3xx) fails the handshake: a local reply with the upstream's
  // status and headers and no body (details websocket_handshake_unsuccessful), and the
  // upstream request is reset. Pseudo-headers are not copied (the reply has its own :status).
  (void)end_stream;
  HeaderMapPtr upstream_headers = std::move(headers);
  chargeUpstreamCode(static_cast<uint32_t>(status), a.host_stats_);
  releaseAttempt(true);
  cleanup();
  websocket_paused_ = false;
  websocket_pending_.drainAll();
  callbacks_->sendLocalReply(
      status, "",
      [h = upstream_headers.get()](HeaderMap& local) {
        for (auto& [k, v] : h->entries()) {
          if (!k.empty() && k[0] != ':') local.addCopy(k, v);
        }
      },
      "websocket_handshake_unsuccessful");
  return true;
}

void RouterFilter::onWebsocketUpgraded() {
  websocket_paused_ = false;
  if (attempt_ && attempt_->request_ && !websocket_pending_.empty()) {
    attempt_->request_->encodeData(websocket_pending_, false);
  }
  websocket_pending_.drainAll();
  if (websocket_pending_above_limit_) {
    websocket_pending_above_limit_ = false;
    callbacks_->onDecoderFilterBelowWriteBufferLowWatermark();
  }
}

void RouterFilter::onAttemptData(Attempt& a, Buffer& data, bool end_stream) {
  if (end_stream) onUpstreamComplete(a);
  callbacks_->encodeData(data, end_stream);
}

void RouterFilter::onAttemptTrailers(Attempt& a, HeaderMapPtr trailers) {
  onUpstreamComplete(a);
  callbacks_->encodeTrailers(std::move(trailers));
}

// The upstream response is complete: upstream_rq_time, the request object goes (after the
// current upstream callback returns). An upstream that answered before the request body ended
// is reset, as Envoy resets it.
void RouterFilter::onUpstreamComplete(Attempt& a) {
  if (response_timer_) response_timer_->disableTimer();
  if (request_complete_time_) cluster_->stats().chargeResponseTiming(msSince(*request_complete_time_), internalRequest());
  (void)a;
  releaseAttempt(!downstream_end_stream_);
  cleanup();
}

// Filter::onUpstreamReset.
void RouterFilter::onAttemptReset(Attempt& a, UpstreamResetReason reason, const std::string& details) {
  a.per_try_timer_.reset();
  // The request object reported its end; it is released without a reset.
  a.releaseRequest(false);
  if (destroyed_) return;
  const RetryState::Reset kind = resetKind(reason, details);
  StreamInfo& info = callbacks_->streamInfo();
  if (reason == UpstreamResetReason::ConnectionFailure) info.upstream_transport_failure_reason = details;
  if (maybeRetryReset(kind, a)) return;
  const int code = kind == RetryState::Reset::ProtocolError ? 502 : 503;
  if (!downstream_response_started_) chargeUpstreamCode(static_cast<uint32_t>(code), a.host_stats_);
  releaseAttempt(false);
  if (downstream_response_started_) {
    // onUpstreamAbort after the response started: only a downstream reset is left.
    info.addResponseFlag(resetFlag(kind));
    cleanup();
    callbacks_->resetStream();
    return;
  }
  // Envoy hides the transport failure reason in the body by default
  // (hide_transport_failure_reason_in_response_body) but keeps it in the details.
  const std::string body = std::string("upstream connect error or disconnect/reset before headers. ") +
                           (is_retry_ ? "retried and the latest " : "") + "reset reason: " + resetReasonString(kind);
  const std::string details_str = replaceSpaces("upstream_reset_before_response_started{" + resetReasonString(kind) +
                                                (details.empty() ? "" : "|" + details) + "}");
  onUpstreamAbort(code, resetFlag(kind), body, details_str);
}

void RouterFilter::releaseAttempt(bool reset) {
  if (!attempt_) return;
  Attempt* raw = attempt_.release();
  if (reset) {
    raw->reset();
  } else {
    raw->per_try_timer_.reset();
    raw->releaseActive();
    raw->releaseRequest(false);
  }
  // Deleted after the current event: it may be the object whose callback is running.
  callbacks_->dispatcher().deferredDelete([raw] { delete raw; });
}

// Filter::cleanup: the retry state (and its timer) and the global timer go.
void RouterFilter::cleanup() {
  retry_state_.reset();
  if (response_timer_) response_timer_->disableTimer();
}

void RouterFilter::onDestroy() {
  destroyed_ = true;
  releaseAttempt(true);
  cleanup();
}

} // namespace moe
