// filter_manager: per-stream decoder/encoder filter iteration with Envoy's semantics
// (source/common/http/filter_manager.cc, "FM" below). The filter interfaces here are the subset
// of Envoy's Http::StreamDecoderFilter / StreamEncoderFilter / *FilterCallbacks that the golang
// filter and the router use.
//
// Iteration model (same as Envoy): decode filters run in configured order, encode filters in
// reverse order. A filter that returns a Stop status becomes "stopped" (Envoy's
// IterationState::StopSingleIteration); later filters see nothing until it calls
// continue{De,En}coding(), which replays what it held back: headers (end_stream only if the
// stream is complete and nothing is buffered and there are no trailers), then data buffered in
// the filter manager, then trailers (FM:61-133).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "buffer.h"
#include "dispatcher.h"
#include "header_map.h"
#include "route_table.h"
#include "stream_info.h"

namespace moe {

enum class FilterHeadersStatus { Continue, StopIteration };
enum class FilterDataStatus { Continue, StopIterationAndBuffer, StopIterationAndWatermark, StopIterationNoBuffer };
enum class FilterTrailersStatus { Continue, StopIteration };

using ModifyHeadersCb = std::function<void(HeaderMap&)>;

// Grpc::Common::hasGrpcContentType: content-type application/grpc or application/grpc+<x>.
inline bool hasGrpcContentType(const HeaderMap& headers) {
  const std::string* ct = headers.get("content-type");
  return ct && ct->compare(0, 16, "application/grpc") == 0 && (ct->size() == 16 || (*ct)[16] == '+');
}

// Callbacks common to both directions (Envoy's StreamFilterCallbacks).
class StreamFilterCallbacks {
public:
  virtual ~StreamFilterCallbacks() = default;
  virtual Dispatcher& dispatcher() = 0;
  virtual StreamInfo& streamInfo() = 0;
  // The cached route; re-matched with the current request headers after clearRouteCache().
  virtual MatchedRouteConstSharedPtr route() = 0;
  virtual void clearRouteCache() = 0;
  // Envoy's sendLocalReply: through the encoder chain when no response started, straight to the
  // codec when response headers exist but were not sent, else a stream reset.
  // grpc_status: the gRPC status for a gRPC request's trailers-only reply; unset = derived from
  // the HTTP code (utility.cc httpToGrpcStatus).
  virtual void sendLocalReply(int code, std::string_view body, ModifyHeadersCb modify_headers,
                              std::string_view details,
                              std::optional<int64_t> grpc_status = std::nullopt) = 0;
  // The listener's per_connection_buffer_limit_bytes (Envoy: the connection buffer limit).
  virtual uint32_t bufferLimit() = 0;
  virtual void resetStream() = 0;
  virtual uint64_t streamId() const = 0;
};

// Envoy's Http::DownstreamWatermarkCallbacks: the downstream (its connection's write buffer,
// or an encoder filter's streaming buffer) is above its high watermark / back below the low.
class DownstreamWatermarkCallbacks {
public:
  virtual ~DownstreamWatermarkCallbacks() = default;
  virtual void onAboveWriteBufferHighWatermark() = 0;
  virtual void onBelowWriteBufferLowWatermark() = 0;
};

class StreamDecoderFilterCallbacks : public virtual StreamFilterCallbacks {
public:
  // filter_manager.cc addDownstreamWatermarkCallbacks: told at once of every high watermark
  // still in force, so a late registration sees the current state.
  virtual void addDownstreamWatermarkCallbacks(DownstreamWatermarkCallbacks& cb) = 0;
  virtual void removeDownstreamWatermarkCallbacks(DownstreamWatermarkCallbacks& cb) = 0;
  virtual void continueDecoding() = 0;
  // Buffers data in the filter manager (during a headers/data callback or when idle) or, during
  // this filter's trailers callback, sends it on to the next filters inline (FM:832-852).
  virtual void addDecodedData(Buffer& data, bool streaming) = 0;
  virtual void injectDecodedDataToFilterChain(Buffer& data, bool end_stream) = 0;
  // Start the response (used by the terminal router filter); goes through every encoder filter.
  virtual void encodeHeaders(HeaderMapPtr headers, bool end_stream, std::string_view details) = 0;
  virtual void encodeData(Buffer& data, bool end_stream) = 0;
  virtual void encodeTrailers(HeaderMapPtr trailers) = 0;
  virtual void onDecoderFilterAboveWriteBufferHighWatermark() = 0;
  virtual void onDecoderFilterBelowWriteBufferLowWatermark() = 0;
  virtual const HeaderMap* requestHeaders() = 0;
  // The request is an upgrade the connection manager allowed (upgrade_configs).
  virtual bool upgradeAccepted() = 0;
  // The request data the filter manager holds (Envoy's decodingBuffer()), or nullptr.
  virtual const Buffer* decodingBuffer() = 0;
};

class StreamEncoderFilterCallbacks : public virtual StreamFilterCallbacks {
public:
  virtual void continueEncoding() = 0;
  virtual void addEncodedData(Buffer& data, bool streaming) = 0;
  virtual void injectEncodedDataToFilterChain(Buffer& data, bool end_stream) = 0;
  virtual void onEncoderFilterAboveWriteBufferHighWatermark() = 0;
  virtual void onEncoderFilterBelowWriteBufferLowWatermark() = 0;
};

class StreamFilterBase {
public:
  virtual ~StreamFilterBase() = default;
  virtual void onStreamComplete() {}
  virtual void onDestroy() {}
};

class StreamDecoderFilter : public virtual StreamFilterBase {
public:
  virtual FilterHeadersStatus decodeHeaders(HeaderMap& headers, bool end_stream) = 0;
  virtual FilterDataStatus decodeData(Buffer& data, bool end_stream) = 0;
  virtual FilterTrailersStatus decodeTrailers(HeaderMap& trailers) = 0;
  virtual void setDecoderFilterCallbacks(StreamDecoderFilterCallbacks& callbacks) = 0;
};

class StreamEncoderFilter : public virtual StreamFilterBase {
public:
  virtual FilterHeadersStatus encodeHeaders(HeaderMap& headers, bool end_stream) = 0;
  virtual FilterDataStatus encodeData(Buffer& data, bool end_stream) = 0;
  virtual FilterTrailersStatus encodeTrailers(HeaderMap& trailers) = 0;
  virtual void setEncoderFilterCallbacks(StreamEncoderFilterCallbacks& callbacks) = 0;
};

class StreamFilter : public StreamDecoderFilter, public StreamEncoderFilter {};

// Envoy's AccessLog::Instance as registered by filters (addAccessLogHandler).
class AccessLogHandler {
public:
  virtual ~AccessLogHandler() = default;
  virtual void log(AccessLogType type, const HeaderMap* request_headers,
                   const HeaderMap* response_headers, const HeaderMap* response_trailers) = 0;
};

// Implemented by the connection manager's ActiveStream: the codec side and route matching.
class FilterManagerCallbacks {
public:
  virtual ~FilterManagerCallbacks() = default;
  virtual void encodeHeadersToCodec(HeaderMap& headers, bool end_stream) = 0;
  virtual void encodeDataToCodec(Buffer& data, bool end_stream) = 0;
  virtual void encodeTrailersToCodec(HeaderMap& trailers) = 0;
  // Abort the downstream (HTTP/1: close the connection) and end the stream.
  virtual void resetDownstream() = 0;
  virtual MatchedRouteConstSharedPtr matchRoute(const HeaderMap& request_headers) = 0;
  // Whether the cluster manager knows name: Envoy only records a route's cluster in stream info
  // when the cluster exists (conn_manager_impl.cc setVirtualHostRoute).
  virtual bool clusterExists(const std::string& name) = 0;
  virtual void readDisableDownstream(bool disable) = 0;
  // An upgrade request was refused (downstream_rq_ws_on_non_ws_route).
  virtual void onUpgradeRejected() {}
  // Whether an upgrade of this type (the upgrade header, or "CONNECT") may go through, given
  // the route's upgrade_configs (nullptr: no route entry) and the connection manager's
  // (http_connection_manager/config.cc:867-897 createUpgradeFilterChain).
  virtual bool upgradeAllowed(std::string_view /*type*/, const bootstrap::RouteAction* /*route*/) { return false; }
  // The upgrade was accepted (downstream_cx_upgrades_total / _active).
  virtual void onUpgradeAccepted() {}
};

class AccessLogInstance;
class ActiveStreamFilterBase;
class ActiveStreamDecoderFilter;
class ActiveStreamEncoderFilter;

class FilterManager {
public:
  FilterManager(FilterManagerCallbacks& callbacks, Dispatcher& dispatcher, StreamInfo& info,
                uint32_t buffer_limit, uint64_t stream_id);
  ~FilterManager();

  void addStreamDecoderFilter(std::shared_ptr<StreamDecoderFilter> filter);
  void addStreamEncoderFilter(std::shared_ptr<StreamEncoderFilter> filter);
  void addStreamFilter(std::shared_ptr<StreamFilter> filter);
  void addAccessLogHandler(std::shared_ptr<AccessLogHandler> handler);
  // The connection manager's access_log: logged after the filters' handlers, with every log
  // type (conn_manager_impl.cc ActiveStream::log).
  void addConnectionManagerAccessLog(const AccessLogInstance* log) { hcm_access_logs_.push_back(log); }

  // conn_manager_impl.cc:1571: log(DownstreamStart) after the route is resolved, before the
  // filters see the headers.
  void setFlushAccessLogOnNewRequest(bool v) { flush_access_log_on_new_request_ = v; }

  // From the codec (through the ActiveStream).
  void decodeHeaders(HeaderMapPtr headers, bool end_stream);
  void decodeData(Buffer& data, bool end_stream);
  void decodeTrailers(HeaderMapPtr trailers);

  void sendLocalReply(int code, std::string_view body, ModifyHeadersCb modify_headers,
                      std::string_view details, std::optional<int64_t> grpc_status = std::nullopt);
  // A request the connection manager refuses before its filter chain exists (a path that fails
  // normalisation, conn_manager_impl.cc:1494-1518): the headers become the stream's (access
  // log, HEAD and gRPC handling of the reply), no route is resolved and no filter sees them.
  void refuseRequest(HeaderMapPtr headers, bool end_stream, int code, ModifyHeadersCb modify_headers,
                     std::string_view details);

  // End of stream, in Envoy's order (conn_manager_impl.cc:369-387).
  void onStreamComplete();
  void log(AccessLogType type);
  void destroyFilters();
  // The downstream went away: no more encoding to the codec.
  void onDownstreamReset() { saw_downstream_reset_ = true; }
  // filter_manager.cc callHighWatermarkCallbacks/callLowWatermarkCallbacks: the downstream
  // connection's write buffer (from the codec) or an encoder filter's streaming buffer crossed
  // a watermark; every registered DownstreamWatermarkCallbacks (the router's
  // current try) is told.
  void callHighWatermarkCallbacks();
  void callLowWatermarkCallbacks();
  void addDownstreamWatermarkCallbacks(DownstreamWatermarkCallbacks& cb);
  void removeDownstreamWatermarkCallbacks(DownstreamWatermarkCallbacks& cb);

  MatchedRouteConstSharedPtr route();
  void clearRouteCache() { route_cached_ = false; cached_route_.reset(); }

  bool remoteDecodeComplete() const { return remote_decode_complete_; }
  // The request was an upgrade its configuration allowed (Envoy's successful_upgrade_).
  bool upgradeAccepted() const { return upgrade_accepted_; }
  bool responseComplete() const { return local_complete_; }
  bool responseHeadersEncoded() const { return response_headers_encoded_; }
  bool destroyed() const { return destroyed_; }
  const HeaderMap* requestHeaders() const { return request_headers_.get(); }
  const HeaderMap* responseHeaders() const { return response_headers_.get(); }
  Dispatcher& dispatcher() { return dispatcher_; }
  StreamInfo& streamInfo() { return info_; }
  uint32_t bufferLimit() const { return buffer_limit_; }
  uint64_t streamId() const { return stream_id_; }

private:
  // The request headers become the stream's (decodeHeaders and refuseRequest).
  void takeRequestHeaders(HeaderMapPtr headers, bool end_stream);

  friend class ActiveStreamFilterBase;
  friend class ActiveStreamDecoderFilter;
  friend class ActiveStreamEncoderFilter;

  // Which filter callback is on the stack (Envoy's FilterCallState), for addData's choice
  // between buffering and inline dispatch.
  enum CallState : uint32_t {
    DecodeHeaders = 1, DecodeData = 2, DecodeTrailers = 4,
    EncodeHeaders = 8, EncodeData = 16, EncodeTrailers = 32,
  };

  // `from` is the filter whose continuation this is; iteration starts after it (nullptr: from
  // the first filter).
  void decodeHeadersFrom(ActiveStreamDecoderFilter* from, HeaderMap& headers, bool end_stream);
  void decodeDataFrom(ActiveStreamDecoderFilter* from, Buffer& data, bool end_stream);
  void decodeTrailersFrom(ActiveStreamDecoderFilter* from, HeaderMap& trailers);
  void encodeHeadersFrom(ActiveStreamEncoderFilter* from, HeaderMap& headers, bool end_stream);
  void encodeDataFrom(ActiveStreamEncoderFilter* from, Buffer& data, bool end_stream);
  void encodeTrailersFrom(ActiveStreamEncoderFilter* from, HeaderMap& trailers);

  void startResponse(HeaderMapPtr headers, bool end_stream, std::string_view details);
  void addDecodedData(ActiveStreamDecoderFilter& filter, Buffer& data, bool streaming);
  void addEncodedData(ActiveStreamEncoderFilter& filter, Buffer& data, bool streaming);
  void bufferRequestData(Buffer& data);
  void bufferResponseData(Buffer& data);
  // A prepared local reply (utility.cc prepareLocalReply): headers, and the body to send
  // (empty for gRPC trailers-only and HEAD replies).
  struct LocalReply {
    HeaderMapPtr headers;
    std::string body;
  };
  LocalReply prepareLocalReply(int code, std::string_view body, const ModifyHeadersCb& modify,
                               std::optional<int64_t> grpc_status) const;
  void sendDirectLocalReply(LocalReply reply);
  void maybeEndResponse(bool end_stream);
  // True when iteration must stop: the stream ended/was destroyed or a local reply aborted decoding.
  bool decodingStopped() const { return destroyed_ || decoder_aborted_ || local_complete_; }
  bool encodingStopped() const { return destroyed_ || saw_downstream_reset_ || local_complete_; }

  FilterManagerCallbacks& callbacks_;
  Dispatcher& dispatcher_;
  StreamInfo& info_;
  uint32_t buffer_limit_;
  uint64_t stream_id_;

  std::vector<std::unique_ptr<ActiveStreamDecoderFilter>> decoders_;  // decode order
  std::vector<std::unique_ptr<ActiveStreamEncoderFilter>> encoders_;  // encode order (reverse config)
  std::vector<std::shared_ptr<AccessLogHandler>> access_loggers_;
  std::vector<const AccessLogInstance*> hcm_access_logs_;
  // Each filter once, in configuration order (a dual filter appears once).
  std::vector<StreamFilterBase*> unique_filters_;

  HeaderMapPtr request_headers_, request_trailers_, response_headers_, response_trailers_;
  // The response headers a direct local reply replaced. An encoder filter that held them may
  // still point at them: the golang filter's encoding state, read under its mutex by a Go
  // goroutine (GetHeader/CopyHeaders) until onDestroy runs later in the same event. Kept alive
  // until the stream is deleted instead of freed under that reader.
  HeaderMapPtr replaced_response_headers_;
  // Data held by the filter manager on behalf of a stopped filter (Envoy: buffered_*_data_).
  BufferPtr buffered_request_data_, buffered_response_data_;
  // Envoy's decoder/encoder_filters_streaming_: true until a filter buffers with
  // StopIterationAndBuffer; decides between 413/500 and backpressure when the buffer overflows.
  bool request_buffer_streaming_ = true, response_buffer_streaming_ = true;
  bool request_watermark_raised_ = false;
  bool response_watermark_raised_ = false;  // buffered_response_data_ above the limit (streaming)
  std::vector<DownstreamWatermarkCallbacks*> watermark_callbacks_;
  uint32_t high_watermark_count_ = 0;

  uint32_t call_state_ = 0;
  bool remote_decode_complete_ = false;   // codec delivered the request's end
  bool response_end_observed_ = false;    // the response's end entered the encoder chain
  bool decoder_aborted_ = false;          // a local reply started: drop further decoding
  bool response_headers_encoded_ = false; // non-1xx response headers reached the codec
  bool local_complete_ = false;           // the response's end reached the codec
  bool saw_downstream_reset_ = false;
  bool destroyed_ = false;                // destroyFilters() ran
  bool is_head_request_ = false;
  bool is_grpc_request_ = false;
  bool flush_access_log_on_new_request_ = false;
  bool upgrade_accepted_ = false;

  bool route_cached_ = false;
  MatchedRouteConstSharedPtr cached_route_;
};

} // namespace moe
