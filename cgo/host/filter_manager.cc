#include "filter_manager.h"

#include "access_log.h"
#include "logger.h"

namespace moe {

// ---------------------------------------------------------------------------------------------
// Per-filter entries (Envoy's ActiveStreamFilterBase, ActiveStreamDecoderFilter and
// ActiveStreamEncoderFilter). The continuation logic is one piece of code for both directions,
// as in FM:61-267 (commonContinue, commonHandleAfter{Headers,Data,Trailers}Callback); each
// direction supplies the hooks it is built from (Envoy's pure virtuals of ActiveStreamFilterBase:
// canContinue, observedEndStream, bufferedData, hasTrailers, doHeaders, doData, doTrailers) plus
// the two rules that differ: how data is buffered (the request side answers an overflow with
// 413 and streams with a downstream read-disable, the response side with 500) and what follows a
// replay of buffered data (the request side lifts its read-disable below half the limit).
//
// Per-filter state (Envoy's IterationState plus two flags):
//   stopped_            false = Continue, true = StopSingleIteration: this filter holds back
//                       everything after it until it calls continue*().
//   headers_continued_  the headers went past this filter.
//   end_stream_         this filter has seen end_stream; later data frames are not for it.
// ---------------------------------------------------------------------------------------------

class ActiveStreamFilterBase : public virtual StreamFilterCallbacks {
public:
  ActiveStreamFilterBase(FilterManager& parent, size_t index) : parent_(parent), index_(index) {}

  Dispatcher& dispatcher() override { return parent_.dispatcher_; }
  StreamInfo& streamInfo() override { return parent_.info_; }
  MatchedRouteConstSharedPtr route() override { return parent_.route(); }
  void clearRouteCache() override { parent_.clearRouteCache(); }
  void sendLocalReply(int code, std::string_view body, ModifyHeadersCb modify_headers,
                      std::string_view details, std::optional<int64_t> grpc_status) override {
    parent_.sendLocalReply(code, body, std::move(modify_headers), details, grpc_status);
  }
  uint32_t bufferLimit() override { return parent_.buffer_limit_; }
  void resetStream() override { parent_.callbacks_.resetDownstream(); }
  uint64_t streamId() const override { return parent_.stream_id_; }

  // FM:61-146 commonContinue: the filter resumes iteration and replays what it held back, in
  // order: the headers (if they never went past it), the data the filter manager buffered for
  // it, then the trailers. Each replay may end the stream (a local reply, a reset), so iteration
  // is re-checked after every step.
  void commonContinue() {
    if (!canContinue()) return;
    // StopSingleIteration -> Continue.
    stopped_ = false;
    if (!headers_continued_) {
      // The held headers go on now; they end the stream only when nothing else follows:
      // the stream's end was observed, nothing is buffered and there are no trailers.
      headers_continued_ = true;
      doHeaders(observedEndStream() && !bufferedData() && !hasTrailers());
      if (!canContinue()) return;
    }
    // Trailers may be added while the data is processed (addDecodedData/addEncodedData in the
    // trailers callback of a later filter); only those present before the data are replayed
    // here, later ones by the data iteration itself (FM:126-130).
    const bool had_trailers_before_data = hasTrailers();
    if (Buffer* data = bufferedData()) {
      // With trailers to come the data does not end the stream: the trailers do.
      doData(*data, observedEndStream() && !had_trailers_before_data);
      if (!canContinue()) return;
      onBufferedDataReplayed();
    }
    if (had_trailers_before_data) doTrailers();
  }

  // FM injectDecodedDataToFilterChain / injectEncodedDataToFilterChain (FM:476-491, 1937-1951):
  // data from the filter itself goes to the filters after it, preceded by the headers (without
  // end_stream, since data follows) when they never went past it.
  void commonInjectData(Buffer& data, bool end_stream) {
    if (!canContinue()) return;
    if (!headers_continued_) {
      headers_continued_ = true;
      doHeaders(false);
      if (!canContinue()) return;
    }
    doData(data, end_stream);
  }

  // FM:165-197 commonHandleAfterHeadersCallback: true = go on to the next filter.
  bool commonHandleAfterHeadersCallback(FilterHeadersStatus status) {
    if (status == FilterHeadersStatus::StopIteration) {
      // Continue -> StopSingleIteration: the headers stay here until continue*().
      stopped_ = true;
      return false;
    }
    // Continue: the headers go past this filter.
    headers_continued_ = true;
    return true;
  }

  // FM:215-248 commonHandleAfterDataCallback: true = go on to the next filter.
  bool commonHandleAfterDataCallback(FilterDataStatus status, Buffer& data) {
    if (status == FilterDataStatus::Continue) {
      if (stopped_) {
        // The filter held the headers (or earlier data) and now lets data through: this data is
        // queued behind the held frames and everything is replayed in order by commonContinue,
        // which also moves the filter from StopSingleIteration back to Continue.
        bufferData(data);
        commonContinue();
        return false;
      }
      return true;
    }
    // Any Stop status: Continue -> StopSingleIteration (or stays stopped).
    stopped_ = true;
    if (status == FilterDataStatus::StopIterationAndBuffer ||
        status == FilterDataStatus::StopIterationAndWatermark) {
      // The filter manager keeps the data for the filter. StopIterationAndBuffer marks the
      // direction as buffering (an overflow is then an error reply), StopIterationAndWatermark as
      // streaming (an overflow is then flow control).
      setBufferStreaming(status == FilterDataStatus::StopIterationAndWatermark);
      bufferData(data);
    }
    // StopIterationNoBuffer: the filter took the data itself. (Envoy, FM:233-242, also gives a
    // filter that stops this way on the stream's last frame an empty buffer, so a later
    // commonContinue delivers end_stream; not ported: a continue*() after that would deliver
    // no end_stream here. The golang filter resumes data with inject*DataToFilterChain.)
    return false;
  }

  // FM:250-267 commonHandleAfterTrailersCallback: true = go on to the next filter.
  bool commonHandleAfterTrailersCallback(FilterTrailersStatus status) {
    if (status == FilterTrailersStatus::Continue) {
      if (stopped_) {
        // Headers or data were held: replay them, then these trailers (commonContinue).
        commonContinue();
        return false;
      }
      return true;
    }
    // StopIteration: Continue -> StopSingleIteration; continue*() replays from here.
    stopped_ = true;
    return false;
  }

  FilterManager& parent_;
  size_t index_;
  bool stopped_ = false;
  bool headers_continued_ = false;
  bool end_stream_ = false;

protected:
  // The direction's hooks.
  // Envoy's canContinue (FM:390-403): false once the stream ended, was destroyed, or (decoding) a local
  // reply aborted the decoder chain.
  virtual bool canContinue() = 0;
  // The codec (or the router, for the response) delivered the end of this direction.
  virtual bool observedEndStream() = 0;
  // The data the filter manager holds for this direction (nullptr: none).
  virtual Buffer* bufferedData() = 0;
  virtual bool hasTrailers() = 0;
  // Iterate the held headers, data or trailers through the filters after this one.
  virtual void doHeaders(bool end_stream) = 0;
  virtual void doData(Buffer& data, bool end_stream) = 0;
  virtual void doTrailers() = 0;
  // Hold data for this filter in the filter manager, with the direction's overflow rule.
  virtual void bufferData(Buffer& data) = 0;
  // Whether this direction's buffering streams (watermark) or buffers the whole body.
  virtual void setBufferStreaming(bool streaming) = 0;
  // After commonContinue replayed the buffered data (and the stream goes on).
  virtual void onBufferedDataReplayed() {}
};

class ActiveStreamDecoderFilter : public ActiveStreamFilterBase, public StreamDecoderFilterCallbacks {
public:
  ActiveStreamDecoderFilter(FilterManager& parent, size_t index, std::shared_ptr<StreamDecoderFilter> h)
      : ActiveStreamFilterBase(parent, index), handle_(std::move(h)) {}

  void continueDecoding() override { commonContinue(); }
  void addDecodedData(Buffer& data, bool streaming) override {
    parent_.addDecodedData(*this, data, streaming);
  }
  void injectDecodedDataToFilterChain(Buffer& data, bool end_stream) override {
    commonInjectData(data, end_stream);
  }

  void encodeHeaders(HeaderMapPtr headers, bool end_stream, std::string_view details) override {
    parent_.startResponse(std::move(headers), end_stream, details);
  }
  void encodeData(Buffer& data, bool end_stream) override {
    if (end_stream) parent_.response_end_observed_ = true;
    parent_.encodeDataFrom(nullptr, data, end_stream);
  }
  void encodeTrailers(HeaderMapPtr trailers) override {
    parent_.response_end_observed_ = true;
    parent_.response_trailers_ = std::move(trailers);
    parent_.encodeTrailersFrom(nullptr, *parent_.response_trailers_);
  }
  void onDecoderFilterAboveWriteBufferHighWatermark() override {
    parent_.callbacks_.readDisableDownstream(true);
  }
  void onDecoderFilterBelowWriteBufferLowWatermark() override {
    parent_.callbacks_.readDisableDownstream(false);
  }
  const HeaderMap* requestHeaders() override { return parent_.request_headers_.get(); }
  bool upgradeAccepted() override { return parent_.upgrade_accepted_; }
  void addDownstreamWatermarkCallbacks(DownstreamWatermarkCallbacks& cb) override {
    parent_.addDownstreamWatermarkCallbacks(cb);
  }
  void removeDownstreamWatermarkCallbacks(DownstreamWatermarkCallbacks& cb) override {
    parent_.removeDownstreamWatermarkCallbacks(cb);
  }
  const Buffer* decodingBuffer() override { return parent_.buffered_request_data_.get(); }

  std::shared_ptr<StreamDecoderFilter> handle_;

protected:
  bool canContinue() override { return !parent_.decodingStopped(); }
  bool observedEndStream() override { return parent_.remote_decode_complete_; }
  Buffer* bufferedData() override { return parent_.buffered_request_data_.get(); }
  bool hasTrailers() override { return parent_.request_trailers_ != nullptr; }
  void doHeaders(bool end_stream) override {
    parent_.decodeHeadersFrom(this, *parent_.request_headers_, end_stream);
  }
  void doData(Buffer& data, bool end_stream) override { parent_.decodeDataFrom(this, data, end_stream); }
  void doTrailers() override { parent_.decodeTrailersFrom(this, *parent_.request_trailers_); }
  // 413 when buffering the whole body overflows, read-disable when streaming.
  void bufferData(Buffer& data) override { parent_.bufferRequestData(data); }
  void setBufferStreaming(bool streaming) override { parent_.request_buffer_streaming_ = streaming; }
  // The buffer drained below half the limit: the downstream may be read again (Envoy's
  // watermark buffer low-water callback, requestDataDrained).
  void onBufferedDataReplayed() override {
    if (parent_.request_watermark_raised_ &&
        parent_.buffered_request_data_->length() < parent_.buffer_limit_ / 2) {
      parent_.request_watermark_raised_ = false;
      parent_.callbacks_.readDisableDownstream(false);
    }
  }
};

class ActiveStreamEncoderFilter : public ActiveStreamFilterBase, public StreamEncoderFilterCallbacks {
public:
  ActiveStreamEncoderFilter(FilterManager& parent, size_t index, std::shared_ptr<StreamEncoderFilter> h)
      : ActiveStreamFilterBase(parent, index), handle_(std::move(h)) {}

  void continueEncoding() override { commonContinue(); }
  void addEncodedData(Buffer& data, bool streaming) override {
    parent_.addEncodedData(*this, data, streaming);
  }
  void injectEncodedDataToFilterChain(Buffer& data, bool end_stream) override {
    commonInjectData(data, end_stream);
  }

  // conn_manager_impl.cc onEncoderFilterAbove/BelowWriteBufferHighWatermark: the same
  // downstream watermark callbacks as the connection's write buffer (the router pauses and
  // resumes reading the upstream).
  void onEncoderFilterAboveWriteBufferHighWatermark() override { parent_.callHighWatermarkCallbacks(); }
  void onEncoderFilterBelowWriteBufferLowWatermark() override { parent_.callLowWatermarkCallbacks(); }

  std::shared_ptr<StreamEncoderFilter> handle_;

protected:
  bool canContinue() override { return !parent_.encodingStopped(); }
  bool observedEndStream() override { return parent_.response_end_observed_; }
  Buffer* bufferedData() override { return parent_.buffered_response_data_.get(); }
  bool hasTrailers() override { return parent_.response_trailers_ != nullptr; }
  void doHeaders(bool end_stream) override {
    parent_.encodeHeadersFrom(this, *parent_.response_headers_, end_stream);
  }
  void doData(Buffer& data, bool end_stream) override { parent_.encodeDataFrom(this, data, end_stream); }
  void doTrailers() override { parent_.encodeTrailersFrom(this, *parent_.response_trailers_); }
  // 500 when buffering the whole body overflows; streaming pauses the upstream.
  void bufferData(Buffer& data) override { parent_.bufferResponseData(data); }
  void setBufferStreaming(bool streaming) override { parent_.response_buffer_streaming_ = streaming; }
  // The response buffer drained below half the limit (responseDataDrained).
  void onBufferedDataReplayed() override {
    if (parent_.response_watermark_raised_ &&
        (!parent_.buffered_response_data_ || parent_.buffered_response_data_->length() < parent_.buffer_limit_ / 2)) {
      parent_.response_watermark_raised_ = false;
      onEncoderFilterBelowWriteBufferLowWatermark();
    }
  }
};

// ---------------------------------------------------------------------------------------------
// FilterManager
// ---------------------------------------------------------------------------------------------

FilterManager::FilterManager(FilterManagerCallbacks& callbacks, Dispatcher& dispatcher,
                             StreamInfo& info, uint32_t buffer_limit, uint64_t stream_id)
    : callbacks_(callbacks), dispatcher_(dispatcher), info_(info), buffer_limit_(buffer_limit),
      stream_id_(stream_id) {}

FilterManager::~FilterManager() = default;

void FilterManager::addStreamDecoderFilter(std::shared_ptr<StreamDecoderFilter> filter) {
  auto entry = std::make_unique<ActiveStreamDecoderFilter>(*this, decoders_.size(), filter);
  filter->setDecoderFilterCallbacks(*entry);
  decoders_.push_back(std::move(entry));
  unique_filters_.push_back(filter.get());
}

// Encoders run in reverse configuration order: each new one goes first. Indexes are recomputed
// because they define where a continuation resumes.
void FilterManager::addStreamEncoderFilter(std::shared_ptr<StreamEncoderFilter> filter) {
  auto entry = std::make_unique<ActiveStreamEncoderFilter>(*this, 0, filter);
  filter->setEncoderFilterCallbacks(*entry);
  encoders_.insert(encoders_.begin(), std::move(entry));
  for (size_t i = 0; i < encoders_.size(); i++) encoders_[i]->index_ = i;
  unique_filters_.push_back(filter.get());
}

void FilterManager::addStreamFilter(std::shared_ptr<StreamFilter> filter) {
  addStreamDecoderFilter(filter);
  auto entry = std::make_unique<ActiveStreamEncoderFilter>(*this, 0, filter);
  filter->setEncoderFilterCallbacks(*entry);
  encoders_.insert(encoders_.begin(), std::move(entry));
  for (size_t i = 0; i < encoders_.size(); i++) encoders_[i]->index_ = i;
  // Dual filters get onStreamComplete/onDestroy once (FM onStreamComplete / destroyFilters).
}

void FilterManager::addAccessLogHandler(std::shared_ptr<AccessLogHandler> handler) {
  access_loggers_.push_back(std::move(handler));
}

MatchedRouteConstSharedPtr FilterManager::route() {
  if (!route_cached_) {
    cached_route_ = request_headers_ ? callbacks_.matchRoute(*request_headers_) : nullptr;
    route_cached_ = true;
    // setVirtualHostRoute (conn_manager_impl.cc:2370-2395) replaces the stream info's route and
    // virtual host with the new result, null included.
    info_.has_route = cached_route_ != nullptr;
    info_.route_name = cached_route_ ? cached_route_->route->name : "";
    info_.virtual_host_name = cached_route_ ? cached_route_->virtual_host->name : "";
    // conn_manager_impl.cc:2381-2395 (setVirtualHostRoute): resolving the route also sets the
    // upstream cluster info in stream info, so filters see it (UpstreamClusterName,
    // xds.cluster_name) in decode phases, before the router runs; a re-resolved route without a
    // (known) cluster clears it.
    if (cached_route_ && !cached_route_->cluster_name.empty() &&
        callbacks_.clusterExists(cached_route_->cluster_name)) {
      info_.upstream_cluster = cached_route_->cluster_name;
    } else {
      info_.upstream_cluster.reset();
    }
  }
  return cached_route_;
}

// ---- decoding ----

void FilterManager::takeRequestHeaders(HeaderMapPtr headers, bool end_stream) {
  request_headers_ = std::move(headers);
  is_head_request_ = request_headers_->method() == "HEAD";
  // Grpc::Common::isGrpcRequestHeaders: a :path and a gRPC content-type.
  if (request_headers_->get(":path") && hasGrpcContentType(*request_headers_)) is_grpc_request_ = true;
  if (end_stream) {
    remote_decode_complete_ = true;
    info_.last_downstream_rx = std::chrono::steady_clock::now();
  }
}

void FilterManager::refuseRequest(HeaderMapPtr headers, bool end_stream, int code,
                                  ModifyHeadersCb modify_headers, std::string_view details) {
  takeRequestHeaders(std::move(headers), end_stream);
  route_cached_ = true; // refused before refreshCachedRoute: the stream has no route
  sendLocalReply(code, "", std::move(modify_headers), details);
}

void FilterManager::decodeHeaders(HeaderMapPtr headers, bool end_stream) {
  takeRequestHeaders(std::move(headers), end_stream);
  // The connection manager resolves the route before the filter chain runs (refreshCachedRoute).
  route();
  // filter_manager.cc:1714-1736 createUpgradeFilterChain: an upgrade (or CONNECT, "a special
  // upgrade case") is allowed when the route's upgrade_configs or the connection manager's
  // allow its type; the filter chain is the same either way (no upgrade filter chains here).
  // conn_manager_impl.cc:1561-1590: an allowed one counts as an upgrade, then the
  // DownstreamStart log; a refused one on a stream that found a route is answered 403 before
  // any filter decodes it, empty body, and the connection drained after the reply against
  // smuggling in the upgrade payload. Without a route it goes on to the router's 404.
  const bool connect = request_headers_->method() == "CONNECT";
  bool upgrade_rejected = false;
  if (isUpgradeRequest(*request_headers_) || connect) {
    const std::string type = connect ? std::string("CONNECT") : *request_headers_->get("upgrade");
    const bootstrap::RouteAction* action =
        cached_route_ && cached_route_->route->route ? &*cached_route_->route->route : nullptr;
    if (callbacks_.upgradeAllowed(type, action)) {
      upgrade_accepted_ = true;
      callbacks_.onUpgradeAccepted();
    } else {
      upgrade_rejected = true;
    }
  }
  if (flush_access_log_on_new_request_) log(AccessLogType::DownstreamStart);
  if (upgrade_rejected && cached_route_) {
    info_.drain_connection_upon_completion = true;
    callbacks_.onUpgradeRejected();
    sendLocalReply(403, "", nullptr, "upgrade_failed");
    return;
  }
  decodeHeadersFrom(nullptr, *request_headers_, end_stream);
}

void FilterManager::decodeData(Buffer& data, bool end_stream) {
  info_.bytes_received += data.length();
  if (end_stream) {
    remote_decode_complete_ = true;
    info_.last_downstream_rx = std::chrono::steady_clock::now();
  }
  decodeDataFrom(nullptr, data, end_stream);
}

void FilterManager::decodeTrailers(HeaderMapPtr trailers) {
  request_trailers_ = std::move(trailers);
  remote_decode_complete_ = true;
  info_.last_downstream_rx = std::chrono::steady_clock::now();
  decodeTrailersFrom(nullptr, *request_trailers_);
}

void FilterManager::decodeHeadersFrom(ActiveStreamDecoderFilter* from, HeaderMap& headers,
                                      bool end_stream) {
  if (decodingStopped()) return;
  // If a filter adds body data while handling end_stream headers, the filters after it get
  // end_stream=false and the added data follows from that filter (FM decodeHeaders,
  // continue_data_entry).
  std::optional<size_t> continue_data_entry;
  for (size_t i = from ? from->index_ + 1 : 0; i < decoders_.size(); i++) {
    ActiveStreamDecoderFilter& f = *decoders_[i];
    f.end_stream_ = end_stream && !continue_data_entry;
    call_state_ |= DecodeHeaders;
    FilterHeadersStatus status = f.handle_->decodeHeaders(headers, f.end_stream_);
    call_state_ &= ~DecodeHeaders;
    if (decodingStopped()) return;
    if (!f.commonHandleAfterHeadersCallback(status) && i + 1 < decoders_.size()) {
      if (continue_data_entry) {
        decoders_[*continue_data_entry]->stopped_ = true;
        decoders_[*continue_data_entry]->continueDecoding();
      }
      return;
    }
    if (end_stream && buffered_request_data_ && !continue_data_entry) continue_data_entry = i;
  }
  if (continue_data_entry) {
    decoders_[*continue_data_entry]->stopped_ = true;
    decoders_[*continue_data_entry]->continueDecoding();
  }
}

void FilterManager::decodeDataFrom(ActiveStreamDecoderFilter* from, Buffer& data, bool end_stream) {
  if (decodingStopped()) return;
  for (size_t i = from ? from->index_ + 1 : 0; i < decoders_.size(); i++) {
    ActiveStreamDecoderFilter& f = *decoders_[i];
    // This filter already saw the end of the stream: the data is not for it or later filters.
    if (f.end_stream_) return;
    // With trailers present the data never ends the stream for a filter (FM:769): the
    // trailers do.
    f.end_stream_ = end_stream && !request_trailers_;
    call_state_ |= DecodeData;
    FilterDataStatus status = f.handle_->decodeData(data, f.end_stream_);
    call_state_ &= ~DecodeData;
    if (decodingStopped()) return;
    if (!f.commonHandleAfterDataCallback(status, data)) return;
  }
}

void FilterManager::decodeTrailersFrom(ActiveStreamDecoderFilter* from, HeaderMap& trailers) {
  if (decodingStopped()) return;
  for (size_t i = from ? from->index_ + 1 : 0; i < decoders_.size(); i++) {
    ActiveStreamDecoderFilter& f = *decoders_[i];
    call_state_ |= DecodeTrailers;
    FilterTrailersStatus status = f.handle_->decodeTrailers(trailers);
    call_state_ &= ~DecodeTrailers;
    f.end_stream_ = true;
    if (decodingStopped()) return;
    if (!f.commonHandleAfterTrailersCallback(status)) return;
  }
}

// FM:832-852: buffer unless this filter's trailers callback is running, in which case the
// data goes to the next filters right away (trailers have not passed yet).
void FilterManager::addDecodedData(ActiveStreamDecoderFilter& filter, Buffer& data, bool streaming) {
  if (call_state_ == 0 || (call_state_ & DecodeHeaders) || (call_state_ & DecodeData) ||
      ((call_state_ & DecodeTrailers) && filter.stopped_)) {
    request_buffer_streaming_ = streaming;
    bufferRequestData(data);
  } else if (call_state_ & DecodeTrailers) {
    decodeDataFrom(&filter, data, false);
  } else {
    MOE_LOG(Error, "http", "[%llu] addDecodedData called in an invalid state",
            static_cast<unsigned long long>(stream_id_));
    sendLocalReply(502, "", nullptr, "filter_added_invalid_request_data");
  }
}

void FilterManager::addEncodedData(ActiveStreamEncoderFilter& filter, Buffer& data, bool streaming) {
  if (call_state_ == 0 || (call_state_ & EncodeHeaders) || (call_state_ & EncodeData) ||
      ((call_state_ & EncodeTrailers) && filter.stopped_)) {
    response_buffer_streaming_ = streaming;
    bufferResponseData(data);
  } else if (call_state_ & EncodeTrailers) {
    encodeDataFrom(&filter, data, false);
  } else {
    MOE_LOG(Error, "http", "[%llu] addEncodedData called in an invalid state",
            static_cast<unsigned long long>(stream_id_));
    sendLocalReply(502, "", nullptr, "filter_added_invalid_response_data");
  }
}

// Envoy's watermark buffer for buffered_request_data_: above the limit, a buffering filter
// (StopIterationAndBuffer) gets 413 (requestDataTooLarge); a streaming one pauses the downstream.
void FilterManager::bufferRequestData(Buffer& data) {
  if (!buffered_request_data_) buffered_request_data_ = std::make_unique<Buffer>();
  if (&data != buffered_request_data_.get()) buffered_request_data_->move(data);
  if (buffered_request_data_->length() <= buffer_limit_) return;
  if (!request_buffer_streaming_) {
    // Reset buffering so the local reply does not trip again (FM requestDataTooLarge).
    request_buffer_streaming_ = true;
    sendLocalReply(413, "Payload Too Large", nullptr, "request_payload_too_large");
  } else if (!request_watermark_raised_) {
    request_watermark_raised_ = true;
    callbacks_.readDisableDownstream(true);
  }
}

// FM responseDataTooLarge: 500 (or a reset if the response already started).
void FilterManager::bufferResponseData(Buffer& data) {
  if (!buffered_response_data_) buffered_response_data_ = std::make_unique<Buffer>();
  if (&data != buffered_response_data_.get()) buffered_response_data_->move(data);
  if (buffered_response_data_->length() <= buffer_limit_) return;
  if (!response_buffer_streaming_) {
    response_buffer_streaming_ = true;
    sendLocalReply(500, "Internal Server Error", nullptr, "response_payload_too_large");
  } else if (!response_watermark_raised_) {
    // FM responseDataTooLarge while streaming: onEncoderFilterAboveWriteBufferHighWatermark.
    response_watermark_raised_ = true;
    callHighWatermarkCallbacks();
  }
}

void FilterManager::callHighWatermarkCallbacks() {
  ++high_watermark_count_;
  auto cbs = watermark_callbacks_;  // a callback may unregister itself
  for (auto* cb : cbs) cb->onAboveWriteBufferHighWatermark();
}

void FilterManager::callLowWatermarkCallbacks() {
  if (high_watermark_count_ == 0) return;
  --high_watermark_count_;
  auto cbs = watermark_callbacks_;
  for (auto* cb : cbs) cb->onBelowWriteBufferLowWatermark();
}

void FilterManager::addDownstreamWatermarkCallbacks(DownstreamWatermarkCallbacks& cb) {
  watermark_callbacks_.push_back(&cb);
  for (uint32_t i = 0; i < high_watermark_count_; i++) cb.onAboveWriteBufferHighWatermark();
}

void FilterManager::removeDownstreamWatermarkCallbacks(DownstreamWatermarkCallbacks& cb) {
  watermark_callbacks_.erase(std::remove(watermark_callbacks_.begin(), watermark_callbacks_.end(), &cb),
                             watermark_callbacks_.end());
}

// ---- encoding ----

void FilterManager::startResponse(HeaderMapPtr headers, bool end_stream, std::string_view details) {
  if (encodingStopped() || response_headers_) return;
  if (!details.empty()) info_.response_code_details = std::string(details);
  info_.response_code = static_cast<uint32_t>(headers->status());
  if (end_stream) response_end_observed_ = true;
  response_headers_ = std::move(headers);
  encodeHeadersFrom(nullptr, *response_headers_, end_stream);
}

void FilterManager::encodeHeadersFrom(ActiveStreamEncoderFilter* from, HeaderMap& headers,
                                      bool end_stream) {
  if (encodingStopped()) return;
  std::optional<size_t> continue_data_entry;
  for (size_t i = from ? from->index_ + 1 : 0; i < encoders_.size(); i++) {
    ActiveStreamEncoderFilter& f = *encoders_[i];
    f.end_stream_ = end_stream && !continue_data_entry;
    call_state_ |= EncodeHeaders;
    FilterHeadersStatus status = f.handle_->encodeHeaders(headers, f.end_stream_);
    call_state_ &= ~EncodeHeaders;
    if (encodingStopped()) return;
    if (!f.commonHandleAfterHeadersCallback(status)) {
      if (continue_data_entry) {
        encoders_[*continue_data_entry]->stopped_ = true;
        encoders_[*continue_data_entry]->continueEncoding();
      }
      return;
    }
    if (end_stream && buffered_response_data_ && !continue_data_entry) continue_data_entry = i;
  }
  // All encoder filters passed the headers: hand them to the codec.
  bool modified_end = end_stream && !continue_data_entry;
  response_headers_encoded_ = true;
  info_.response_code = static_cast<uint32_t>(headers.status());
  if (modified_end) local_complete_ = true;
  callbacks_.encodeHeadersToCodec(headers, modified_end);
  if (!modified_end && continue_data_entry && !encodingStopped()) {
    encoders_[*continue_data_entry]->stopped_ = true;
    encoders_[*continue_data_entry]->continueEncoding();
  }
}

void FilterManager::encodeDataFrom(ActiveStreamEncoderFilter* from, Buffer& data, bool end_stream) {
  if (encodingStopped()) return;
  for (size_t i = from ? from->index_ + 1 : 0; i < encoders_.size(); i++) {
    ActiveStreamEncoderFilter& f = *encoders_[i];
    if (f.end_stream_) return;
    f.end_stream_ = end_stream && !response_trailers_;
    call_state_ |= EncodeData;
    FilterDataStatus status = f.handle_->encodeData(data, f.end_stream_);
    call_state_ &= ~EncodeData;
    if (encodingStopped()) return;
    if (!f.commonHandleAfterDataCallback(status, data)) return;
  }
  // Deviation: Envoy passes end_stream to the codec even when trailers exist (FM:1524); with
  // HTTP/1 that would finish the chunked body before the trailers, so the trailers end it here.
  bool codec_end = end_stream && !response_trailers_;
  info_.bytes_sent += data.length();
  if (codec_end) local_complete_ = true;
  callbacks_.encodeDataToCodec(data, codec_end);
}

void FilterManager::encodeTrailersFrom(ActiveStreamEncoderFilter* from, HeaderMap& trailers) {
  if (encodingStopped()) return;
  for (size_t i = from ? from->index_ + 1 : 0; i < encoders_.size(); i++) {
    ActiveStreamEncoderFilter& f = *encoders_[i];
    call_state_ |= EncodeTrailers;
    FilterTrailersStatus status = f.handle_->encodeTrailers(trailers);
    call_state_ &= ~EncodeTrailers;
    f.end_stream_ = true;
    if (encodingStopped()) return;
    if (!f.commonHandleAfterTrailersCallback(status)) return;
  }
  local_complete_ = true;
  callbacks_.encodeTrailersToCodec(trailers);
}

// ---- local replies (FM:1026-1200, source/common/http/utility.cc:727-823) ----

namespace {

// Grpc::Utility::httpToGrpcStatus.
int64_t httpToGrpcStatus(int code) {
  switch (code) {
  case 400: return 13; // Internal
  case 401: return 16; // Unauthenticated
  case 403: return 7;  // PermissionDenied
  case 404: return 12; // Unimplemented
  case 429: case 502: case 503: case 504: return 14; // Unavailable
  default: return 2;   // Unknown
  }
}

// Http::Utility::PercentEncoding::encode with the default reserved set "%".
std::string percentEncode(std::string_view v) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : v) {
    if (ch < ' ' || ch >= '~' || ch == '%') {
      out += '%';
      out += hex[ch >> 4];
      out += hex[ch & 0xf];
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

} // namespace

FilterManager::LocalReply FilterManager::prepareLocalReply(int code, std::string_view body,
                                                           const ModifyHeadersCb& modify,
                                                           std::optional<int64_t> grpc_status) const {
  LocalReply reply;
  reply.headers = std::make_unique<HeaderMap>();
  HeaderMap& headers = *reply.headers;
  headers.addCopy(":status", std::to_string(code));
  // DownstreamFilterManager's modify_headers: finalizeHeaders (the route's response header
  // lists, when the stream's route is a route entry; a direct response applies them through its
  // own modify), then the caller's.
  if (cached_route_ && cached_route_->route && cached_route_->route->route) {
    FormatContext ctx;
    ctx.request_headers = request_headers_.get();
    ctx.response_headers = &headers;
    cached_route_->finalizeResponseHeaders(headers, ctx, info_);
  }
  if (modify) modify(headers);
  if (is_grpc_request_) {
    // A trailers-only gRPC response: 200, grpc-status (unless the caller set one) from the given
    // status or the HTTP code, the body percent-encoded in grpc-message, no body.
    headers.setOnly(":status", "200");
    headers.setOnly("content-type", "application/grpc");
    if (headers.get("grpc-status") == nullptr || headers.get("grpc-status")->empty()) {
      headers.setOnly("grpc-status", std::to_string(grpc_status ? *grpc_status : httpToGrpcStatus(code)));
    }
    if (!body.empty() && !is_head_request_) headers.setOnly("grpc-message", percentEncode(body));
    headers.remove("content-length");
    return reply;
  }
  if (!body.empty()) {
    headers.setOnly("content-length", std::to_string(body.size()));
    if (headers.get("content-type") == nullptr) headers.addCopy("content-type", "text/plain");
    if (!is_head_request_) reply.body = std::string(body);
  } else {
    headers.remove("content-length");
    headers.remove("content-type");
  }
  return reply;
}

void FilterManager::sendLocalReply(int code, std::string_view body, ModifyHeadersCb modify,
                                   std::string_view details, std::optional<int64_t> grpc_status) {
  if (destroyed_ || saw_downstream_reset_ || local_complete_) return;
  info_.response_code_details = std::string(details);
  // Nothing more is decoded once a local reply starts (decoder_filter_chain_aborted_).
  decoder_aborted_ = true;
  // FM:1058-1064: a cleared route cache is refreshed before the reply runs the encoders.
  route();
  // Prepared first: body/details may point into memory that encoding frees (e.g. a Go string).
  LocalReply reply = prepareLocalReply(code, body, modify, grpc_status);
  if (!response_headers_) {
    // No response yet: run the reply through every encoder filter, like any response
    // (sendLocalReplyViaFilterChain).
    response_end_observed_ = true;
    bool headers_only = reply.body.empty();
    response_headers_ = std::move(reply.headers);
    info_.response_code = static_cast<uint32_t>(response_headers_->status());
    encodeHeadersFrom(nullptr, *response_headers_, headers_only);
    if (!headers_only && !encodingStopped()) {
      Buffer b(reply.body);
      encodeDataFrom(nullptr, b, true);
    }
  } else if (!response_headers_encoded_) {
    // Response headers exist but an encoder filter holds them: replace the response and write
    // it straight to the codec, skipping the encoder filters (sendDirectLocalReply).
    sendDirectLocalReply(std::move(reply));
  } else {
    // The response already started on the wire: the only signal left is a reset.
    callbacks_.resetDownstream();
  }
}

void FilterManager::sendDirectLocalReply(LocalReply reply) {
  response_end_observed_ = true;
  // Nested watermark callbacks must not fire for the reply body.
  response_buffer_streaming_ = true;
  bool headers_only = reply.body.empty();
  replaced_response_headers_ = std::move(response_headers_);
  response_headers_ = std::move(reply.headers);
  info_.response_code = static_cast<uint32_t>(response_headers_->status());
  response_headers_encoded_ = true;
  if (headers_only) local_complete_ = true;
  callbacks_.encodeHeadersToCodec(*response_headers_, headers_only);
  if (!headers_only && !destroyed_ && !saw_downstream_reset_) {
    Buffer b(reply.body);
    info_.bytes_sent += b.length();
    local_complete_ = true;
    callbacks_.encodeDataToCodec(b, true);
  }
}

// ---- end of stream ----

void FilterManager::onStreamComplete() {
  for (auto* f : unique_filters_) f->onStreamComplete();
}

void FilterManager::log(AccessLogType type) {
  for (auto& h : access_loggers_) {
    h->log(type, request_headers_.get(), response_headers_.get(), response_trailers_.get());
  }
  if (hcm_access_logs_.empty()) return;
  FormatContext ctx;
  ctx.request_headers = request_headers_.get();
  ctx.response_headers = response_headers_.get();
  ctx.response_trailers = response_trailers_.get();
  ctx.access_log_type = type;
  for (const AccessLogInstance* l : hcm_access_logs_) l->log(ctx, info_);
}

void FilterManager::destroyFilters() {
  if (destroyed_) return;
  destroyed_ = true;
  for (auto* f : unique_filters_) f->onDestroy();
}

} // namespace moe
