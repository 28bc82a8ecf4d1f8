// router: the terminal decoder filter (Envoy's source/common/router/router.cc, reduced): route
// and cluster lookup, one upstream request per stream (no retries), the global route timeout,
// request/response streaming with no buffering, Envoy's local replies for routing failures.
#pragma once
#include <memory>
#include <string>

#include "filter_manager.h"
#include "server.h"
#include "upstream.h"

namespace moe {

class RouterFilter : public StreamDecoderFilter, public UpstreamCallbacks, public DownstreamWatermarkCallbacks {
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
  void onUpstreamAboveWriteBufferHighWatermark() override;
  void onUpstreamBelowWriteBufferLowWatermark() override;

  // DownstreamWatermarkCallbacks (upstream_request.cc DownstreamWatermarkManager)
  void onAboveWriteBufferHighWatermark() override { readDisableOrDefer(true); }
  void onBelowWriteBufferLowWatermark() override { readDisableOrDefer(false); }

private:
  // upstream_request.cc:773-800: pause / resume reading the upstream for the downstream;
  // deferred until the response started downstream (maybeHandleDeferredReadDisable).
  void readDisableOrDefer(bool disable);
  void clusterCounter(const char* name);
  void onRequestComplete();
  void onResponseTimeout();
  void onUpstreamComplete();
  // Drops the upstream request; reset=true cancels it (closing its connection).
  void releaseUpstream(bool reset);

  ClusterManager& cm_;
  StreamDecoderFilterCallbacks* callbacks_ = nullptr;
  ClusterSharedPtr cluster_; // held while the request uses it (CDS may replace it meanwhile)
  UpstreamRequestPtr upstream_;
  TimerPtr response_timer_;
  uint64_t timeout_ms_ = 0;
  bool request_complete_ = false;   // downstream request fully sent upstream
  bool response_started_ = false;   // upstream response headers went downstream
  bool destroyed_ = false;
  bool watermarks_registered_ = false;
  uint32_t deferred_read_disabling_count_ = 0;
  uint32_t downstream_data_disabled_ = 0;  // downstream reads paused for the upstream's buffer
};

} // namespace moe
