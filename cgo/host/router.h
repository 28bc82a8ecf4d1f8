// router: the terminal decoder filter (Envoy's source/common/router/router.cc, reduced): route
// and cluster lookup, the route's header lists, timeouts (global and per try), retries
// (RetryState: retry_on, num_retries, back-off; the request body kept for them up to the buffer
// limit), request/response streaming, Envoy's local replies for routing failures. The HTTP
// filters before it run once per stream; only the upstream request is repeated.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "filter_manager.h"
#include "retry_state.h"
#include "server.h"
#include "upstream.h"

namespace moe {

class RouterFilter : public StreamDecoderFilter {
public:
  explicit RouterFilter(ClusterManager& cm) : cm_(cm) {}
  ~RouterFilter() override;

  // StreamDecoderFilter
  FilterHeadersStatus decodeHeaders(HeaderMap& headers, bool end_stream) override;
  FilterDataStatus decodeData(Buffer& data, bool end_stream) override;
  FilterTrailersStatus decodeTrailers(HeaderMap& trailers) override;
  void setDecoderFilterCallbacks(StreamDecoderFilterCallbacks& cb) override { callbacks_ = &cb; }
  void onDestroy() override;

private:
  // One try of the upstream request (Envoy's UpstreamRequest). It owns the flow control between
  // its upstream connection and the downstream (upstream_request.cc): it is the upstream's
  // watermark callbacks, and, from onPoolReady until its request goes, registered with the
  // downstream as DownstreamWatermarkCallbacks (Envoy's DownstreamWatermarkManager), so a
  // retry's attempt has a registration of its own.
  class Attempt : public UpstreamCallbacks, public DownstreamWatermarkCallbacks {
  public:
    explicit Attempt(RouterFilter& parent) : parent_(parent) {}
    ~Attempt() override;
    void onPoolReady(const std::string& host) override;
    void onUpstreamHeaders(HeaderMapPtr headers, bool end_stream) override;
    void onUpstreamData(Buffer& data, bool end_stream) override;
    void onUpstreamTrailers(HeaderMapPtr trailers) override;
    void onUpstreamReset(UpstreamResetReason reason, const std::string& details) override;
    // upstream_request.cc:810-824 disable/enableDataFromDownstreamForFlowControl.
    void onUpstreamAboveWriteBufferHighWatermark() override;
    void onUpstreamBelowWriteBufferLowWatermark() override;

    // DownstreamWatermarkCallbacks (upstream_request.cc:802-809 DownstreamWatermarkManager)
    void onAboveWriteBufferHighWatermark() override { readDisableOrDefer(true); }
    void onBelowWriteBufferLowWatermark() override { readDisableOrDefer(false); }

    // Cancels the request (its connection closes) and releases the host's active request.
    void reset();
    void setupPerTryTimeout();
    void releaseActive();
    // The request object goes (reset first when asked; deleted after the current event), its
    // watermark registration with it (clearRequestEncoder), and the downstream is not left
    // paused for it (upstream_request.cc:258-262).
    void releaseRequest(bool reset);
    // upstream_request.cc:773-800: pause / resume reading the upstream for the downstream;
    // deferred until the response started downstream.
    void readDisableOrDefer(bool disable);
    // upstream_request.cc:337-347: pauses asked for before the response take effect now.
    void maybeHandleDeferredReadDisable();
    void clusterCounter(const char* name);

    RouterFilter& parent_;
    UpstreamRequestPtr request_;
    std::string host_;
    HostStats* host_stats_ = nullptr;
    TimerPtr per_try_timer_;
    bool pool_ready_ = false;      // a connection was bound (the request started upstream)
    bool awaiting_headers_ = true;
    bool retried_ = false;
    bool create_per_try_timeout_on_request_complete_ = false;
    bool encode_complete_ = false; // the whole request was sent upstream
    bool watermarks_registered_ = false;
    uint32_t deferred_read_disabling_count_ = 0;
    uint32_t downstream_data_disabled_ = 0;  // downstream reads paused for the upstream's buffer
  };

  void startAttempt(HeaderMap& headers, bool end_stream);
  // upstream_codec_filter.cc:162-223: the upstream's answer to a websocket upgrade.
  // Returns true when it was handled (a failed handshake answered as a local reply).
  bool onWebsocketHandshakeResponse(Attempt& a, HeaderMapPtr& headers, bool end_stream);
  void onRequestComplete();
  void onResponseTimeout();
  void onPerTryTimeout(Attempt& a);
  void onAttemptHeaders(Attempt& a, HeaderMapPtr headers, bool end_stream);
  void onAttemptData(Attempt& a, Buffer& data, bool end_stream);
  void onAttemptTrailers(Attempt& a, HeaderMapPtr trailers);
  void onAttemptReset(Attempt& a, UpstreamResetReason reason, const std::string& details);
  void onUpstreamComplete(Attempt& a);
  bool maybeRetryReset(RetryState::Reset reason, Attempt& a);
  void doRetry();
  void updateStatsOnNoRetry(RetryState::Status status);
  // chargeUpstreamCode / chargeUpstreamAbort.
  void chargeUpstreamCode(uint32_t code, HostStats* host);
  void onUpstreamAbort(int code, const char* flag, const std::string& body, const std::string& details);
  void sendLocalReply(int code, const std::string& body, const std::string& details);
  // Drops the current attempt (deleted after the current event); reset cancels it.
  void releaseAttempt(bool reset);
  void cleanup();
  void setTimeoutHeaders(uint64_t elapsed_ms, HeaderMap& headers);
  bool internalRequest() const;
  // The router's modify_headers_: x-envoy-attempt-count on responses when the virtual host
  // includes it.
  void modifyResponseHeaders(HeaderMap& headers) const;

  ClusterManager& cm_;
  StreamDecoderFilterCallbacks* callbacks_ = nullptr;
  MatchedRouteConstSharedPtr route_;
  ClusterSharedPtr cluster_; // held while the request uses it (CDS may replace it meanwhile)
  HeaderMap* downstream_headers_ = nullptr;
  const HeaderMap* downstream_trailers_ = nullptr;
  std::unique_ptr<Attempt> attempt_;
  std::unique_ptr<RetryState> retry_state_;
  TimerPtr response_timer_;
  uint64_t global_timeout_ms_ = 0;
  uint64_t per_try_timeout_ms_ = 0;
  uint32_t attempt_count_ = 0;
  uint32_t pending_retries_ = 0;
  std::optional<std::chrono::steady_clock::time_point> request_complete_time_;
  bool downstream_end_stream_ = false;   // the downstream request was fully received
  bool downstream_response_started_ = false;
  bool request_buffer_overflowed_ = false;
  bool is_retry_ = false;
  bool include_attempt_count_in_request_ = false;
  bool destroyed_ = false;
  // An upgrade the connection manager allowed: a dedicated upstream connection, no retries.
  // A websocket one (Utility::isWebSocketUpgradeRequest) waits for the upstream's 101 before
  // any payload goes up (upstream_request.cc:423-437 paused_for_websocket_), the payload kept
  // meanwhile in websocket_pending_ (upstream_codec_filter.cc:92: StopAllIterationAndWatermark).
  bool upgrade_ = false;
  bool websocket_paused_ = false;
  bool websocket_pending_above_limit_ = false;
  Buffer websocket_pending_;
  void onWebsocketUpgraded();
  bool watermarks_registered_ = false;
  uint32_t deferred_read_disabling_count_ = 0;
  uint32_t downstream_data_disabled_ = 0;  // downstream reads paused for the upstream's buffer
};

} // namespace moe
