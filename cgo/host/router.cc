#include "router.h"

#include <algorithm>
#include <cstdlib>

#include "http1_codec.h"
#include "logger.h"
#include "stats.h"

namespace moe {
namespace {

// Http::Utility::resetReasonToString for the reasons the upstream side reports.
std::string resetReasonString(UpstreamResetReason reason, const std::string& details) {
  switch (reason) {
  case UpstreamResetReason::ConnectionFailure:
    return details.find("timeout") != std::string::npos ? "connection timeout"
                                                         : "remote connection failure";
  case UpstreamResetReason::ConnectionTermination: return "connection termination";
  case UpstreamResetReason::ProtocolError: return "protocol error";
  case UpstreamResetReason::LocalReset: return "local reset";
  }
  return "";
}

std::string replaceSpaces(std::string s) {
  std::replace(s.begin(), s.end(), ' ', '_');
  return s;
}

} // namespace

RouterFilter::~RouterFilter() { releaseUpstream(true); }

// Http::HeaderUtility::isEnvoyInternalRequest: x-envoy-internal: true.
bool RouterFilter::internalRequest() const {
  const HeaderMap* h = callbacks_->requestHeaders();
  const std::string* v = h ? h->get("x-envoy-internal") : nullptr;
  return v != nullptr && *v == "true";
}

FilterHeadersStatus RouterFilter::decodeHeaders(HeaderMap& headers, bool end_stream) {
  StreamInfo& info = callbacks_->streamInfo();
  MatchedRouteConstSharedPtr route = callbacks_->route();
  if (!route) {
    // router.cc:505-516: no route -> 404 with an empty body.
    info.addResponseFlag("NR");
    callbacks_->sendLocalReply(404, "", nullptr, "route_not_found");
    return FilterHeadersStatus::StopIteration;
  }
  if (route->route->direct_response) {
    const auto& dr = *route->route->direct_response;
    callbacks_->sendLocalReply(static_cast<int>(dr.status), dr.body, nullptr, "direct_response");
    return FilterHeadersStatus::StopIteration;
  }
  const bootstrap::RouteAction& action = *route->route->route;
  Cluster* cluster = route->cluster_name.empty() ? nullptr : cm_.get(route->cluster_name);
  if (cluster == nullptr) {
    // router.cc:566-575: unknown cluster (a cluster_header naming no cluster, too) -> the route's
    // cluster_not_found_response_code (503 by default), empty body, flag NC.
    info.addResponseFlag("NC");
    callbacks_->sendLocalReply(static_cast<int>(action.cluster_not_found_response_code),
                               "", nullptr, "cluster_not_found");
    return FilterHeadersStatus::StopIteration;
  }
  info.upstream_cluster = cluster->name();
  cluster_ = cluster;

  // Route timeout (router.cc:200-300): the route's timeout, 0 disables it; the upstream is told
  // through x-envoy-expected-rq-timeout-ms.
  timeout_ms_ = action.timeout_ms;
  // x-envoy-upstream-rq-timeout-ms overrides the route timeout and is consumed (finalTimeout;
  // the host has no edge/internal distinction, like Envoy without use_remote_address).
  if (const std::string* hv = headers.get("x-envoy-upstream-rq-timeout-ms")) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(hv->c_str(), &end, 10);
    if (end != hv->c_str() && *end == '\0') timeout_ms_ = v;
    headers.remove("x-envoy-upstream-rq-timeout-ms");
  }
  if (timeout_ms_ > 0) headers.setOnly("x-envoy-expected-rq-timeout-ms", std::to_string(timeout_ms_));

  // Route rewrites mutate the request headers in place, as Envoy's finalizeRequestHeaders does;
  // the original path is kept in x-envoy-original-path.
  if (action.prefix_rewrite && route->route->match.kind == bootstrap::RouteMatch::Kind::Prefix) {
    std::string path(headers.path());
    const std::string& prefix = route->route->match.value;
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
  if (action.host_rewrite_literal) headers.setOnly(":authority", *action.host_rewrite_literal);

  std::optional<std::string> override_host;
  bool override_strict = false;
  if (info.upstream_override_host) {
    override_host = info.upstream_override_host->first;
    override_strict = info.upstream_override_host->second;
  }
  // UpstreamCodecFilter::decodeHeaders (upstream_codec_filter.cc:63-83): the HTTP/1 request
  // encoder refuses a request a filter left with a missing :method/:path or with an invalid
  // header name or value (a Go plugin's SetHeader/SetPath with CR/LF, say): 503 with the error
  // as the body, and nothing is written upstream.
  if (std::string err = checkRequestHeadersForUpstream(headers); !err.empty()) {
    info.addResponseFlag("DPE");
    callbacks_->sendLocalReply(503, err, nullptr,
                               "filter_removed_required_request_headers{" + replaceSpaces(err) + "}");
    return FilterHeadersStatus::StopIteration;
  }
  info.attempt_count = 1;
  upstream_ = cluster->newRequest(callbacks_->dispatcher(), *this, override_host, override_strict);
  if (!upstream_) {
    // router.cc:1050-1060.
    info.addResponseFlag("UH");
    callbacks_->sendLocalReply(503, "no healthy upstream", nullptr, "no_healthy_upstream");
    return FilterHeadersStatus::StopIteration;
  }
  info.upstream_tx_start = std::chrono::steady_clock::now();
  upstream_->encodeHeaders(headers, end_stream);
  if (end_stream) onRequestComplete();
  return FilterHeadersStatus::StopIteration;
}

FilterDataStatus RouterFilter::decodeData(Buffer& data, bool end_stream) {
  if (upstream_) {
    upstream_->encodeData(data, end_stream);
    if (end_stream) onRequestComplete();
  }
  data.drainAll();
  return FilterDataStatus::StopIterationNoBuffer;
}

FilterTrailersStatus RouterFilter::decodeTrailers(HeaderMap& trailers) {
  if (upstream_) {
    upstream_->encodeTrailers(trailers);
    onRequestComplete();
  }
  return FilterTrailersStatus::StopIteration;
}

// The global timeout runs from the end of the downstream request (router.cc onRequestComplete).
void RouterFilter::onRequestComplete() {
  request_complete_ = true;
  request_complete_time_ = std::chrono::steady_clock::now();
  if (timeout_ms_ == 0 || !upstream_) return;
  response_timer_ = callbacks_->dispatcher().createTimer([this] { onResponseTimeout(); });
  response_timer_->enableTimer(std::chrono::milliseconds(timeout_ms_));
}

void RouterFilter::onResponseTimeout() {
  releaseUpstream(true);
  callbacks_->streamInfo().addResponseFlag("UT");
  if (!response_started_) {
    // router.cc:1530-1545: 504 "upstream request timeout".
    callbacks_->sendLocalReply(504, "upstream request timeout", nullptr, "upstream_response_timeout");
  } else {
    callbacks_->resetStream();
  }
}

void RouterFilter::onPoolReady(const std::string& host) {
  StreamInfo& info = callbacks_->streamInfo();
  info.upstream_remote_address = host;
  // conn_pool_base.cc attachStreamToClient: upstream_rq_total counts requests bound to an
  // upstream connection (so not those whose connect failed).
  if (cluster_ != nullptr) {
    cluster_->stats().upstream_rq_total.inc();
    cluster_->stats().upstream_rq_active.add(1);
    host_stats_ = &cluster_->stats().host(host);
    host_stats_->rq_total.inc();
    host_stats_->rq_active.add(1);
  }
}

void RouterFilter::onUpstreamHeaders(HeaderMapPtr headers, bool end_stream) {
  // 100-continue is not forwarded (Envoy proxies it only with proxy_100_continue).
  if (headers->status() == 100) return;
  StreamInfo& info = callbacks_->streamInfo();
  info.first_upstream_rx = std::chrono::steady_clock::now();
  // router.cc onUpstreamHeaders: x-envoy-upstream-service-time (ms from the upstream request).
  if (info.upstream_tx_start) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*info.first_upstream_rx -
                                                                    *info.upstream_tx_start);
    headers->setOnly("x-envoy-upstream-service-time", std::to_string(ms.count()));
  }
  response_started_ = true;
  // chargeUpstreamCode (router.cc): the cluster's response code stats.
  if (cluster_ != nullptr) cluster_->stats().chargeResponse(static_cast<uint32_t>(headers->status()), internalRequest());
  if (host_stats_ != nullptr) (headers->status() >= 500 ? host_stats_->rq_error : host_stats_->rq_success).inc();
  if (end_stream) onUpstreamComplete();
  callbacks_->encodeHeaders(std::move(headers), end_stream, "via_upstream");
}

void RouterFilter::onUpstreamData(Buffer& data, bool end_stream) {
  if (end_stream) onUpstreamComplete();
  callbacks_->encodeData(data, end_stream);
}

void RouterFilter::onUpstreamTrailers(HeaderMapPtr trailers) {
  onUpstreamComplete();
  callbacks_->encodeTrailers(std::move(trailers));
}

// The upstream response is complete: stop the timer and let the request object go (after the
// current upstream callback returns). An upstream that answered before the request body ended
// is cancelled, as Envoy resets it.
void RouterFilter::onUpstreamComplete() {
  if (response_timer_) response_timer_->disableTimer();
  // router.cc onUpstreamComplete: upstream_rq_time from the end of the downstream request.
  if (cluster_ != nullptr && request_complete_ && request_complete_time_) {
    cluster_->stats().chargeResponseTiming(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::steady_clock::now() - *request_complete_time_).count()),
                                           internalRequest());
  }
  releaseUpstream(!request_complete_);
}

void RouterFilter::onUpstreamReset(UpstreamResetReason reason, const std::string& details) {
  // No more callbacks follow; the request object can go.
  releaseUpstream(false);
  if (response_timer_) response_timer_->disableTimer();
  if (destroyed_) return;
  std::string reason_str = resetReasonString(reason, details);
  callbacks_->streamInfo().addResponseFlag(
      reason == UpstreamResetReason::ConnectionFailure ? "UF" : "UC");
  if (response_started_) {
    // router.cc onUpstreamAbort: the response started, so only a downstream reset is left.
    callbacks_->resetStream();
    return;
  }
  // router.cc:1690-1710. Envoy hides the transport failure reason in the body by default
  // (hide_transport_failure_reason_in_response_body) but keeps it in the details.
  std::string body = "upstream connect error or disconnect/reset before headers. reset reason: " +
                     reason_str;
  std::string details_str = replaceSpaces("upstream_reset_before_response_started{" + reason_str +
                                          (details.empty() ? "" : "|" + details) + "}");
  callbacks_->sendLocalReply(503, body, nullptr, details_str);
}

void RouterFilter::onDestroy() {
  destroyed_ = true;
  if (response_timer_) response_timer_->disableTimer();
  releaseUpstream(true);
}

void RouterFilter::releaseUpstream(bool reset) {
  if (!upstream_) return;
  // conn_pool_base.cc onStreamClosed: the request leaves its connection.
  if (host_stats_ != nullptr) {
    host_stats_->rq_active.sub(1);
    cluster_->stats().upstream_rq_active.sub(1);
    host_stats_ = nullptr;
  }
  UpstreamRequest* raw = upstream_.release();
  if (reset) raw->reset();
  // Deleted after the current event: we may be inside one of its callbacks.
  if (callbacks_) {
    callbacks_->dispatcher().deferredDelete([raw] { delete raw; });
  } else {
    delete raw;
  }
}

} // namespace moe
