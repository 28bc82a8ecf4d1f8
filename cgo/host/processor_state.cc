#include "processor_state.h"

#include "logger.h"

namespace moe::golang {

Buffer& BufferList::push(Buffer& data) {
  auto b = std::make_unique<Buffer>();
  b->move(data);
  Buffer& ref = *b;
  queue_.push_back(std::move(b));
  return ref;
}

void BufferList::moveOut(Buffer& data) {
  for (auto& b : queue_) data.move(*b);
  queue_.clear();
}

void BufferList::clearLatest() {
  if (!queue_.empty()) queue_.pop_back();
}

void BufferList::clearAll() { queue_.clear(); }

bool BufferList::checkExisting(const Buffer* data) const {
  for (auto& b : queue_) {
    if (b.get() == data) return true;
  }
  return false;
}

std::string ProcessorState::stateStr() const {
  static const char* names[] = {"WaitingHeader", "ProcessingHeader", "WaitingData",
                                "WaitingAllData", "ProcessingData", "WaitingTrailer",
                                "ProcessingTrailer", "Done"};
  std::string prefix = encoding() ? "encoder:" : "decoder:";
  int s = state;
  return prefix + ((s >= 0 && s <= 7) ? names[s] : "unknown(" + std::to_string(s) + ")");
}

// PS:52-94.
bool ProcessorState::handleHeaderGolangStatus(GolangStatus status) {
  bool done = false;
  switch (status) {
  case GolangStatus::LocalReply: // Go already called SendLocalReply: wait for it.
  case GolangStatus::Running:    // Go continues asynchronously.
    break;
  case GolangStatus::Continue:
    // ProcessingHeader -> Done (headers ended the stream) | WaitingData
    setFilterState(do_end_stream_ ? FilterState::Done : FilterState::WaitingData);
    done = true;
    break;
  case GolangStatus::StopAndBuffer:
    // ProcessingHeader -> WaitingAllData: Go wants the whole body at once.
    setFilterState(FilterState::WaitingAllData);
    break;
  case GolangStatus::StopAndBufferWatermark:
    // ProcessingHeader -> WaitingData: headers held, body chunks go to Go one by one.
    setFilterState(FilterState::WaitingData);
    break;
  default:
    MOE_LOG(Error, "golang", "unexpected status: %d", static_cast<int>(status));
    break;
  }
  return done;
}

// PS:96-165.
bool ProcessorState::handleDataGolangStatus(GolangStatus status) {
  bool done = false;
  switch (status) {
  case GolangStatus::LocalReply:
  case GolangStatus::Running:
    // Async: return before the trailers check below (PS:105-112).
    return false;
  case GolangStatus::Continue:
    // ProcessingData -> Done | WaitingData
    setFilterState(do_end_stream_ ? FilterState::Done : FilterState::WaitingData);
    done = true;
    break;
  case GolangStatus::StopAndBuffer:
    if (do_end_stream_) MOE_LOG(Error, "golang", "want more data while stream is end");
    // ProcessingData -> WaitingAllData; this chunk stays in doDataList.
    setFilterState(FilterState::WaitingAllData);
    break;
  case GolangStatus::StopAndBufferWatermark:
    if (do_end_stream_) MOE_LOG(Error, "golang", "want more data while stream is end");
    // ProcessingData -> WaitingData; this chunk stays in doDataList.
    setFilterState(FilterState::WaitingData);
    break;
  case GolangStatus::StopNoBuffer:
    if (do_end_stream_) MOE_LOG(Error, "golang", "want more data while stream is end");
    // ProcessingData -> WaitingData; the chunk Go just saw is dropped.
    doDataList.clearLatest();
    setFilterState(FilterState::WaitingData);
    break;
  default:
    MOE_LOG(Error, "golang", "unexpected status: %d", static_cast<int>(status));
    break;
  }
  // Trailers arrived meanwhile and nothing is buffered: -> WaitingTrailer (PS:155-159).
  if (trailers != nullptr && isBufferDataEmpty()) setFilterState(FilterState::WaitingTrailer);
  return done;
}

// PS:167-199.
bool ProcessorState::handleTrailerGolangStatus(GolangStatus status) {
  switch (status) {
  case GolangStatus::LocalReply:
  case GolangStatus::Running:
    return false;
  case GolangStatus::Continue:
    // ProcessingTrailer -> Done
    setFilterState(FilterState::Done);
    return true;
  default:
    MOE_LOG(Error, "golang", "unexpected status: %d", static_cast<int>(status));
    return false;
  }
}

// PS:201-235: must run on the worker thread.
bool ProcessorState::handleGolangStatus(GolangStatus status) {
  switch (filterState()) {
  case FilterState::ProcessingHeader: return handleHeaderGolangStatus(status);
  case FilterState::ProcessingData: return handleDataGolangStatus(status);
  case FilterState::ProcessingTrailer: return handleTrailerGolangStatus(status);
  default:
    MOE_LOG(Error, "golang", "unexpected state %s for status %d", stateStr().c_str(),
            static_cast<int>(status));
    return false;
  }
}

void ProcessorState::continueDoData() {
  if (!end_stream_ && doDataList.empty()) return;
  Buffer data_to_write;
  doDataList.moveOut(data_to_write);
  injectDataToFilterChain(data_to_write, do_end_stream_);
}

void ProcessorState::continueProcessing() {
  if (encoding()) encoder_callbacks_->continueEncoding();
  else decoder_callbacks_->continueDecoding();
}

void ProcessorState::injectDataToFilterChain(Buffer& data, bool end_stream) {
  if (encoding()) encoder_callbacks_->injectEncodedDataToFilterChain(data, end_stream);
  else decoder_callbacks_->injectDecodedDataToFilterChain(data, end_stream);
}

void ProcessorState::sendLocalReply(int code, std::string_view body, ModifyHeadersCb modify,
                                    std::string_view details, std::optional<int64_t> grpc_status) {
  if (!encoding()) {
    // Decode side: any -> WaitingHeader, so the local reply's encode pass finds a clean
    // decoder state (PSH:206-215).
    setFilterState(FilterState::WaitingHeader);
  }
  callbacks().sendLocalReply(code, body, std::move(modify), details, grpc_status);
}

void ProcessorState::addData(Buffer& data, bool is_streaming) {
  if (encoding()) encoder_callbacks_->addEncodedData(data, is_streaming);
  else decoder_callbacks_->addDecodedData(data, is_streaming);
}

Buffer& ProcessorState::getBufferData() {
  if (!data_buffer_) data_buffer_ = std::make_unique<Buffer>();
  return *data_buffer_;
}

// PS:278-342: a watermark buffer with high = bufferLimit(), low = limit/2. Above the high mark
// in WaitingAllData the stream fails (413 decoding, 500 encoding); otherwise reading pauses
// until the buffer drains below the low mark.
void ProcessorState::addBufferData(Buffer& data) {
  Buffer& buf = getBufferData();
  size_t before = buf.length();
  buf.move(data);
  uint32_t limit = callbacks().bufferLimit();
  if (limit == 0) return;
  if (buf.length() > limit && before <= limit) {
    if (filterState() == FilterState::WaitingAllData) {
      if (encoding()) {
        MOE_LOG(Debug, "golang", "golang filter encode data buffer is full, reply with 500");
        encoder_callbacks_->sendLocalReply(500, "Internal Server Error", nullptr,
                                           "response_payload_too_large");
      } else {
        MOE_LOG(Debug, "golang", "golang filter decode data buffer is full, reply with 413");
        decoder_callbacks_->sendLocalReply(413, "Payload Too Large", nullptr,
                                           "request_payload_too_large");
      }
      return;
    }
    if (!watermark_requested_) {
      watermark_requested_ = true;
      if (encoding()) encoder_callbacks_->onEncoderFilterAboveWriteBufferHighWatermark();
      else decoder_callbacks_->onDecoderFilterAboveWriteBufferHighWatermark();
    }
  }
}

void ProcessorState::onBufferDrained() {
  if (!watermark_requested_) return;
  if (data_buffer_ && data_buffer_->length() >= callbacks().bufferLimit() / 2) return;
  watermark_requested_ = false;
  if (encoding()) encoder_callbacks_->onEncoderFilterBelowWriteBufferLowWatermark();
  else decoder_callbacks_->onDecoderFilterBelowWriteBufferLowWatermark();
}

} // namespace moe::golang
