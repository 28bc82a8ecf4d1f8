// processor_state: port of Envoy's contrib/golang/filters/http/source/processor_state.{h,cc}
// ("PS"/"PSH"). One ProcessorState per direction per stream; Go receives a processState*
// pointing at offset 0 of it, reads `state` to choose the phase and `is_encoding` to choose the
// direction. Unlike Envoy's class hierarchy this is one non-virtual class parameterised by the
// direction, so processState really is at offset 0.
//
// State machine (numbers are the ABI's FilterState; every transition below is commented where
// it happens):
//   WaitingHeader -> ProcessingHeader            processHeader()   (decodeHeaders/encodeHeaders)
//   ProcessingHeader -> Done|WaitingData         Go: Continue (end_stream decides)
//   ProcessingHeader -> WaitingAllData           Go: StopAndBuffer
//   ProcessingHeader -> WaitingData              Go: StopAndBufferWatermark
//   WaitingData|WaitingAllData -> ProcessingData processData()     (data for Go)
//   ProcessingData -> Done|WaitingData           Go: Continue
//   ProcessingData -> WaitingAllData             Go: StopAndBuffer
//   ProcessingData -> WaitingData                Go: StopAndBufferWatermark / StopNoBuffer
//   any data status, trailers seen, buffer empty -> WaitingTrailer
//   WaitingTrailer|WaitingData|WaitingAllData -> ProcessingTrailer  processTrailer()
//   ProcessingTrailer -> Done                    Go: Continue
//   (decode side) any -> WaitingHeader           local reply from Go (PSH:206-215)
//   Running / LocalReply never change the state: Go finishes asynchronously.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "buffer.h"
#include "filter_manager.h"
#include "golang_abi.h"

namespace moe::golang {

// The chunks handed to Go in the current phase (PS:13-49). Go gets a pointer to one element as
// its buffer handle; CAPI buffer calls check the handle is still in the list.
class BufferList {
public:
  Buffer& push(Buffer& data);       // moves data into a new element
  void moveOut(Buffer& data);       // appends all elements to data and empties the list
  void clearLatest();               // drops the newest element (StopNoBuffer)
  void clearAll();
  bool checkExisting(const Buffer* data) const;
  bool empty() const { return queue_.empty(); }

private:
  std::deque<std::unique_ptr<Buffer>> queue_;
};

class ProcessorState : public processState {
public:
  ProcessorState(httpRequest* r, bool encoding) {
    req = r;
    is_encoding = encoding ? 1 : 0;
    setFilterState(FilterState::WaitingHeader);
  }

  FilterState filterState() const { return static_cast<FilterState>(state); }
  void setFilterState(FilterState st) { state = static_cast<int>(st); }
  std::string stateStr() const;
  bool encoding() const { return is_encoding == 1; }

  void setDecoderCallbacks(StreamDecoderFilterCallbacks* cb) { decoder_callbacks_ = cb; }
  void setEncoderCallbacks(StreamEncoderFilterCallbacks* cb) { encoder_callbacks_ = cb; }
  StreamFilterCallbacks& callbacks() const {
    return encoding() ? static_cast<StreamFilterCallbacks&>(*encoder_callbacks_)
                      : static_cast<StreamFilterCallbacks&>(*decoder_callbacks_);
  }
  Dispatcher& dispatcher() const { return callbacks().dispatcher(); }
  bool isThreadSafe() const { return dispatcher().isThreadSafe(); }
  StreamInfo& streamInfo() const { return callbacks().streamInfo(); }

  // PSH:97-101: Go is running a phase (or the access-log/stream-complete callback).
  bool isProcessingInGo() const {
    auto s = filterState();
    return s == FilterState::ProcessingHeader || s == FilterState::ProcessingData ||
           s == FilterState::ProcessingTrailer || req->is_golang_processing_log.load() != 0;
  }

  // The filter's own buffer of data that arrived while Go was busy or while it asked for all
  // data (a watermark buffer in Envoy: 413/500 above bufferLimit() in WaitingAllData,
  // backpressure otherwise; PS:278-342).
  void addBufferData(Buffer& data);
  Buffer& getBufferData();
  bool isBufferDataEmpty() const { return !data_buffer_ || data_buffer_->empty(); }
  void drainBufferData() { if (data_buffer_) data_buffer_->drainAll(); }
  // The watermark buffer's low-water callback: resume reading once below half the limit.
  void onBufferDrained();

  bool isProcessingEndStream() const { return do_end_stream_; }
  void setEndStream(bool e) { end_stream_ = e; }
  bool getEndStream() const { return end_stream_; }
  // Seen trailers also means the stream ended.
  bool isStreamEnd() const { return end_stream_ || trailers != nullptr; }

  // Transitions into Go (called right before entering Go; Go reads `state`).
  void processHeader(bool end_stream) {
    // WaitingHeader -> ProcessingHeader
    setFilterState(FilterState::ProcessingHeader);
    do_end_stream_ = end_stream;
  }
  void processData(bool end_stream) {
    // WaitingData|WaitingAllData -> ProcessingData
    setFilterState(FilterState::ProcessingData);
    do_end_stream_ = end_stream;
  }
  void processTrailer() {
    // WaitingTrailer|WaitingData|WaitingAllData -> ProcessingTrailer
    setFilterState(FilterState::ProcessingTrailer);
    do_end_stream_ = true;
  }

  // Apply Go's returned status; true = this phase is done and the frame may go on.
  bool handleHeaderGolangStatus(GolangStatus status);
  bool handleDataGolangStatus(GolangStatus status);
  bool handleTrailerGolangStatus(GolangStatus status);
  bool handleGolangStatus(GolangStatus status);

  // Hand Go's data (doDataList) to the next filters (PSH:117-127).
  void continueDoData();
  void continueProcessing();
  void injectDataToFilterChain(Buffer& data, bool end_stream);
  void sendLocalReply(int code, std::string_view body, ModifyHeadersCb modify,
                      std::string_view details, std::optional<int64_t> grpc_status);
  void addData(Buffer& data, bool is_streaming);

  HeaderMap* headers = nullptr;
  HeaderMap* trailers = nullptr;
  // The size Go was told (header_num, header_bytes of the call that handed the map over): Go
  // sizes its copy buffers by it (the SDK and cgo/envoyabi alike). Not in Envoy: moe-host uses
  // it to refuse a copy that would write past them (Filter::copyMapToGo).
  struct Announced {
    uint64_t num = 0, bytes = 0;
  };
  Announced announced_headers, announced_trailers;
  BufferList doDataList;

private:
  StreamDecoderFilterCallbacks* decoder_callbacks_ = nullptr;
  StreamEncoderFilterCallbacks* encoder_callbacks_ = nullptr;
  bool watermark_requested_ = false;
  std::unique_ptr<Buffer> data_buffer_;
  bool end_stream_ = false;     // the filter manager's end_stream for this direction
  bool do_end_stream_ = false;  // the end_stream Go saw in the current phase
};

} // namespace moe::golang
