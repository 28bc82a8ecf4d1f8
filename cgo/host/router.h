// router: the terminal decoder filter (Envoy's source/common/router/router.cc, reduced): route
// and cluster lookup, one upstream request per stream (no retries), the global route timeout,
// request/response streaming with no buffering, Envoy's local replies for routing failures.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "filter_manager.h"
#include "server.h"
#include "upstream.h"

namespace moe {

class RouterFilter : public StreamDecoderFilter, public UpstreamCallbacks {
public:
  explicit RouterFilter(ClusterManager& cm) : cm_(cm) {}
  ~RouterFilter() override;

  // StreamDecoderFilter
  FilterHeadersStatus decodeHeaders(HeaderMap& headers, bool end_stream) override;
  FilterDataStatus decodeData(Buffer& data, bool end_stream) override;
  FilterTrailersStatus decodeTrailers(HeaderMap& trailers) override;
  void setDecoderFilterCallbacks(StreamDecoderFilterCallbacks& cb) override { callbacks_ = &cb; }
  void onDestroy() override;

  // UpstreamCallbacks
  void onPoolReady(const std::string& host) override;
  void onUpstreamHeaders(HeaderMapPtr headers, bool end_stream) override;
  void onUpstreamData(Buffer& data, bool end_stream) override;
  void onUpstreamTrailers(HeaderMapPtr trailers) override;
  void onUpstreamReset(UpstreamResetReason reason, const std::string& details) override;

private:
  void onRequestComplete();
  void onResponseTimeout();
  void onUpstreamComplete();
  // Drops the upstream request; reset=true cancels it (closing its connection).
  void releaseUpstream(bool reset);
  bool internalRequest() const;

  ClusterManager& cm_;
  StreamDecoderFilterCallbacks* callbacks_ = nullptr;
  UpstreamRequestPtr upstream_;
  Cluster* cluster_ = nullptr;
  HostStats* host_stats_ = nullptr;  // the bound host's, while the request is active
  std::optional<std::chrono::steady_clock::time_point> request_complete_time_;
  TimerPtr response_timer_;
  uint64_t timeout_ms_ = 0;
  bool request_complete_ = false;   // downstream request fully sent upstream
  bool response_started_ = false;   // upstream response headers went downstream
  bool destroyed_ = false;
};

} // namespace moe
