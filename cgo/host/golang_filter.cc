#include "golang_filter.h"

#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_set>

#include "go_calls.h"
#include "logger.h"
#include "properties.h"
#include "proto_wire.h"

namespace moe::golang {

// ============================================================================================
// MetricStore (GF:1834-1929)
// ============================================================================================

namespace {
constexpr uint32_t kMetricTypeMask = 0x3;
constexpr uint32_t kCounter = 0, kGauge = 1, kHistogram = 2;
} // namespace

CAPIStatus MetricStore::define(uint32_t type, const std::string& name, uint32_t* id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (type > kHistogram) return CAPIValueNotFound;
  // Ids count from 1 per type, shifted left by 2 with the type in the low bits (GFH:35-56).
  if (type == kCounter) {
    uint32_t mid = ((++next_counter_) << 2) | kCounter;
    counters_[mid] = &stats().counter(name);
    *id = mid;
  } else if (type == kGauge) {
    uint32_t mid = ((++next_gauge_) << 2) | kGauge;
    gauges_[mid] = &stats().gauge(name);
    *id = mid;
  } else {
    uint32_t mid = ((++next_histogram_) << 2) | kHistogram;
    histograms_[mid] = &stats().histogram(name);
    *id = mid;
  }
  return CAPIOK;
}

CAPIStatus MetricStore::increment(uint32_t id, int64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t type = id & kMetricTypeMask;
  if (type == kCounter) {
    auto it = counters_.find(id);
    if (it != counters_.end() && offset > 0) it->second->inc(static_cast<uint64_t>(offset));
  } else if (type == kGauge) {
    auto it = gauges_.find(id);
    if (it != gauges_.end()) {
      if (offset > 0) it->second->add(offset);
      else it->second->sub(-offset);
    }
  }
  return CAPIOK;
}

CAPIStatus MetricStore::get(uint32_t id, uint64_t* value) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t type = id & kMetricTypeMask;
  if (type == kCounter) {
    auto it = counters_.find(id);
    if (it != counters_.end()) *value = it->second->get();
  } else if (type == kGauge) {
    auto it = gauges_.find(id);
    if (it != gauges_.end()) *value = static_cast<uint64_t>(it->second->get());
  }
  return CAPIOK;
}

CAPIStatus MetricStore::record(uint32_t id, uint64_t value) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t type = id & kMetricTypeMask;
  if (type == kCounter) {
    auto it = counters_.find(id);
    if (it != counters_.end()) it->second->inc(value);
  } else if (type == kGauge) {
    auto it = gauges_.find(id);
    if (it != gauges_.end()) it->second->set(static_cast<int64_t>(value));
  } else {
    auto it = histograms_.find(id);
    if (it != histograms_.end()) it->second->record(value);
  }
  return CAPIOK;
}

// ============================================================================================
// FilterConfig (CFGCC:17-48, GF:1789-1832)
// ============================================================================================

FilterConfig::FilterConfig(const bootstrap::HttpFilter& filter, const std::string& stats_prefix,
                           uint32_t concurrency)
    : filter_name_(filter.name), plugin_name_(filter.golang.plugin_name),
      library_id_(filter.golang.library_id), library_path_(filter.golang.library_path),
      plugin_config_any_(filter.golang.plugin_config_any), secrets_(filter.golang.secrets),
      concurrency_(concurrency),
      panic_error_(&stats().counter(stats_prefix + "golang.panic_error")) {
  lib_ = loadGoLibrary(library_id_, library_path_, plugin_name_);
}

FilterConfig::~FilterConfig() {
  if (config_id_ > 0) go::destroyHttpPluginConfig(*lib_, config_id_, 0);
}

void FilterConfig::newGoPluginConfig() {
  // Heap-allocated: Go keeps the pointer for metrics and frees it with ConfigHttpFinalize.
  auto* c = new HttpConfigInternal();
  go_held_config_ = c;
  c->filter_config = weak_from_this();
  c->config.plugin_name_ptr = reinterpret_cast<uint64_t>(plugin_name_.data());
  c->config.plugin_name_len = plugin_name_.size();
  c->config.config_ptr = reinterpret_cast<uint64_t>(plugin_config_any_.data());
  c->config.config_len = plugin_config_any_.size();
  c->config.is_route_config = 0;
  c->config.concurrency = concurrency_;
  config_id_ = go::newHttpPluginConfig(*lib_, &c->config);
  if (config_id_ == 0) {
    throw std::runtime_error("golang filter " + filter_name_ + " failed to parse plugin config: " +
                             plugin_name_ + " (" + library_id_ + " " + library_path_ + ")");
  }
  MOE_LOG(Debug, "golang", "golang filter new plugin config, id: %llu",
          static_cast<unsigned long long>(config_id_));
}

// ============================================================================================
// Per-route plugin configs (GF:1933-2051)
// ============================================================================================

namespace {

struct RouteConfigEntry {
  std::mutex mu;
  httpConfig config{};         // Go reads it during the NewHttpPluginConfig call only
  uint64_t config_id = 0;
  uint64_t merged_config_id = 0;
  uint64_t cached_parent_id = 0;
};

std::mutex g_route_mu;
std::map<const bootstrap::RoutePluginConfig*, std::unique_ptr<RouteConfigEntry>>& routeEntries() {
  static auto* m = new std::map<const bootstrap::RoutePluginConfig*, std::unique_ptr<RouteConfigEntry>>();
  return *m;
}

RouteConfigEntry& entryFor(const bootstrap::RoutePluginConfig* cfg) {
  std::lock_guard<std::mutex> lock(g_route_mu);
  auto& p = routeEntries()[cfg];
  if (!p) p = std::make_unique<RouteConfigEntry>();
  return *p;
}

// RoutePluginConfig::getConfigId: parse the per-route Any with is_route_config=1.
uint64_t parseRouteConfig(GoLibrary& lib, RouteConfigEntry& e, const bootstrap::RoutePluginConfig& cfg,
                          const std::string& plugin_name) {
  e.config.plugin_name_ptr = reinterpret_cast<uint64_t>(plugin_name.data());
  e.config.plugin_name_len = plugin_name.size();
  e.config.config_ptr = reinterpret_cast<uint64_t>(cfg.config_any.data());
  e.config.config_len = cfg.config_any.size();
  e.config.is_route_config = 1;
  return go::newHttpPluginConfig(lib, &e.config);
}

} // namespace

namespace {
template <class Fn> void forEachRoutePluginConfig(const bootstrap::RouteConfiguration& rc, Fn fn) {
  auto visit = [&](const bootstrap::PerFilterConfig& pfc) {
    for (auto& [filter_name, plugins] : pfc) {
      for (auto& [plugin_name, cfg] : plugins) fn(filter_name, plugin_name, cfg);
    }
  };
  visit(rc.per_filter_config);
  for (auto& vh : rc.virtual_hosts) {
    visit(vh.per_filter_config);
    for (auto& r : vh.routes) visit(r.per_filter_config);
  }
}
} // namespace

void RoutePluginConfigs::preload(const bootstrap::RouteConfiguration& rc) {
  try {
    forEachRoutePluginConfig(rc, [&](const std::string& filter_name, const std::string& plugin_name,
                                     const bootstrap::RoutePluginConfig& cfg) {
      GoLibrary* lib = goLibraryByPluginName(plugin_name);
      if (lib == nullptr) return; // Envoy: parsed lazily once the library is known
      RouteConfigEntry& e = entryFor(&cfg);
      std::lock_guard<std::mutex> lock(e.mu);
      if (e.config_id != 0) return;
      e.config_id = parseRouteConfig(*lib, e, cfg, plugin_name);
      if (e.config_id == 0) {
        throw std::runtime_error("golang filter " + filter_name +
                                 " failed to parse per-route plugin config: " + plugin_name);
      }
    });
  } catch (...) {
    release(rc);
    throw;
  }
}

void RoutePluginConfigs::release(const bootstrap::RouteConfiguration& rc) {
  forEachRoutePluginConfig(rc, [&](const std::string&, const std::string& plugin_name,
                                   const bootstrap::RoutePluginConfig& cfg) {
    std::unique_ptr<RouteConfigEntry> e;
    {
      std::lock_guard<std::mutex> lock(g_route_mu);
      auto it = routeEntries().find(&cfg);
      if (it == routeEntries().end()) return;
      e = std::move(it->second);
      routeEntries().erase(it);
    }
    GoLibrary* lib = goLibraryByPluginName(plugin_name);
    if (lib == nullptr) return;
    std::lock_guard<std::mutex> lock(e->mu);
    if (e->config_id > 0) go::destroyHttpPluginConfig(*lib, e->config_id, 0);
    if (e->merged_config_id > 0 && e->merged_config_id != e->config_id)
      go::destroyHttpPluginConfig(*lib, e->merged_config_id, 0);
  });
}

// RoutePluginConfig::getMergedConfigId (GF:2014-2051).
uint64_t RoutePluginConfigs::mergedConfigId(const bootstrap::RoutePluginConfig& cfg,
                                            const std::string& plugin_name, uint64_t parent_id) {
  GoLibrary* lib = goLibraryByPluginName(plugin_name);
  if (lib == nullptr) return parent_id;
  RouteConfigEntry& e = entryFor(&cfg);
  std::lock_guard<std::mutex> lock(e.mu);
  if (e.merged_config_id > 0) {
    if (e.cached_parent_id == parent_id) return e.merged_config_id;
    // The parent changed: another worker may still be about to use the old merged id, so Go
    // deletes it after a delay (need_delay=1).
    go::destroyHttpPluginConfig(*lib, e.merged_config_id, 1);
  }
  if (e.config_id == 0) {
    e.config_id = parseRouteConfig(*lib, e, cfg, plugin_name);
    if (e.config_id == 0) {
      // Envoy RELEASE_ASSERTs here ("TODO: terminate request or passthrough").
      MOE_LOG(Critical, "golang", "per-route plugin config for %s failed to parse",
              plugin_name.c_str());
      std::abort();
    }
  }
  e.merged_config_id = go::mergeHttpPluginConfig(*lib, plugin_name, parent_id, e.config_id);
  e.cached_parent_id = parent_id;
  return e.merged_config_id;
}

// ============================================================================================
// Filter: stream callbacks (GF:46-240)
// ============================================================================================

Filter::Filter(FilterConfigSharedPtr config, uint32_t worker_id)
    : config_(std::move(config)), lib_(config_->lib()),
      req_(new HttpRequestInternal(config_->pluginName())) {
  req_->req.worker_id = worker_id;
}

// The request memory is not ours to free here: onDestroy frees it when Go never saw it,
// otherwise Go's GC does through envoyGoFilterHttpFinalize.
Filter::~Filter() = default;

void Filter::setDecoderFilterCallbacks(StreamDecoderFilterCallbacks& cb) {
  decoder_callbacks_ = &cb;
  dispatcher_ = &cb.dispatcher();
  req_->decoding_state.setDecoderCallbacks(&cb);
}

void Filter::setEncoderFilterCallbacks(StreamEncoderFilterCallbacks& cb) {
  encoder_callbacks_ = &cb;
  req_->encoding_state.setEncoderCallbacks(&cb);
}

template <class Fn> void Filter::postIfAlive(Fn fn) {
  std::weak_ptr<Filter> weak = weak_from_this();
  dispatcher_->post([weak, fn = std::move(fn)]() mutable {
    auto self = weak.lock();
    if (!self || self->hasDestroyed()) {
      MOE_LOG(Debug, "golang", "golang filter has gone or destroyed before a posted callback");
      return;
    }
    fn();
  });
}

FilterHeadersStatus Filter::decodeHeaders(HeaderMap& headers, bool end_stream) {
  ProcessorState& state = req_->decoding_state;
  request_headers_ = &headers;
  state.setEndStream(end_stream);
  bool done = doHeaders(state, headers, end_stream);
  return done ? FilterHeadersStatus::Continue : FilterHeadersStatus::StopIteration;
}

FilterDataStatus Filter::decodeData(Buffer& data, bool end_stream) {
  ProcessorState& state = req_->decoding_state;
  state.setEndStream(end_stream);
  bool done = doData(state, data, end_stream);
  if (done) {
    state.doDataList.moveOut(data);
    return FilterDataStatus::Continue;
  }
  return FilterDataStatus::StopIterationNoBuffer;
}

FilterTrailersStatus Filter::decodeTrailers(HeaderMap& trailers) {
  ProcessorState& state = req_->decoding_state;
  request_trailers_ = &trailers;
  bool done = doTrailer(state, trailers);
  return done ? FilterTrailersStatus::Continue : FilterTrailersStatus::StopIteration;
}

// May be entered in any decode state: a local reply can start the response at any time
// (GF:89-106), so DecodeXXX and EncodeXXX may run concurrently in Go.
FilterHeadersStatus Filter::encodeHeaders(HeaderMap& headers, bool end_stream) {
  ProcessorState& state = req_->encoding_state;
  state.setEndStream(end_stream);
  response_headers_ = &headers;
  bool done = doHeaders(state, headers, end_stream);
  return done ? FilterHeadersStatus::Continue : FilterHeadersStatus::StopIteration;
}

FilterDataStatus Filter::encodeData(Buffer& data, bool end_stream) {
  ProcessorState& state = req_->encoding_state;
  state.setEndStream(end_stream);
  bool done = doData(state, data, end_stream);
  if (done) {
    state.doDataList.moveOut(data);
    return FilterDataStatus::Continue;
  }
  return FilterDataStatus::StopIterationNoBuffer;
}

FilterTrailersStatus Filter::encodeTrailers(HeaderMap& trailers) {
  ProcessorState& state = req_->encoding_state;
  response_trailers_ = &trailers;
  bool done = doTrailer(state, trailers);
  return done ? FilterTrailersStatus::Continue : FilterTrailersStatus::StopIteration;
}

// GF:136-142: the log flag doubles as "Go may call back" during stream complete.
void Filter::onStreamComplete() {
  req_->req.is_golang_processing_log.store(1);
  go::onHttpStreamComplete(lib_, &req_->req);
  req_->req.is_golang_processing_log.store(0);
}

// GF:144-176.
void Filter::onDestroy() {
  if (req_->req.configId == 0) {
    // Go never saw this request, so no finalizer will free it.
    delete req_;
    req_ = nullptr;
    has_destroyed_.store(true, std::memory_order_release);
    return;
  }
  bool already_destroyed;
  {
    // Fence: off-thread readers of stream-owned maps finish before the stream can be freed.
    std::lock_guard<std::mutex> lock(mutex_);
    already_destroyed = has_destroyed_.exchange(true, std::memory_order_acq_rel);
  }
  if (already_destroyed) return;
  DestroyReason reason = isProcessingInGo() ? DestroyReason::Terminate : DestroyReason::Normal;
  go::onHttpDestroy(lib_, &req_->req, static_cast<uint64_t>(reason));
}

// GF:179-240. Runs before onDestroy; initRequest() here means Go sees every stream.
void Filter::log(::moe::AccessLogType type, const HeaderMap* request_headers,
                 const HeaderMap* response_headers, const HeaderMap* response_trailers) {
  if (req_ == nullptr) return;
  uint64_t req_header_num = 0, req_header_bytes = 0, req_trailer_num = 0, req_trailer_bytes = 0;
  uint64_t resp_header_num = 0, resp_header_bytes = 0, resp_trailer_num = 0, resp_trailer_bytes = 0;
  ProcessorState& dec = req_->decoding_state;
  ProcessorState& enc = req_->encoding_state;
  if (initRequest()) request_headers_ = const_cast<HeaderMap*>(request_headers);
  if (request_headers_ != nullptr) {
    req_header_num = request_headers_->size();
    req_header_bytes = request_headers_->byteSize();
    dec.headers = request_headers_;
    dec.announced_headers = {req_header_num, req_header_bytes};
  }
  if (request_trailers_ != nullptr) {
    req_trailer_num = request_trailers_->size();
    req_trailer_bytes = request_trailers_->byteSize();
    dec.trailers = request_trailers_;
    dec.announced_trailers = {req_trailer_num, req_trailer_bytes};
  }
  response_headers_ = response_headers;
  if (response_headers_ != nullptr) {
    resp_header_num = response_headers_->size();
    resp_header_bytes = response_headers_->byteSize();
    enc.headers = const_cast<HeaderMap*>(response_headers_);
    enc.announced_headers = {resp_header_num, resp_header_bytes};
  }
  response_trailers_ = response_trailers;
  if (response_trailers_ != nullptr) {
    resp_trailer_num = response_trailers_->size();
    resp_trailer_bytes = response_trailers_->byteSize();
    enc.trailers = const_cast<HeaderMap*>(response_trailers_);
    enc.announced_trailers = {resp_trailer_num, resp_trailer_bytes};
  }
  req_->req.is_golang_processing_log.store(1);
  go::onHttpLog(lib_, &req_->req, static_cast<uint64_t>(type), &dec, &enc, req_header_num,
                req_header_bytes, req_trailer_num, req_trailer_bytes, resp_header_num,
                resp_header_bytes, resp_trailer_num, resp_trailer_bytes);
  req_->req.is_golang_processing_log.store(0);
}

// ============================================================================================
// Filter: calling into Go (GF:242-387)
// ============================================================================================

GolangStatus Filter::doHeadersGo(ProcessorState& state, HeaderMap& headers, bool end_stream) {
  initRequest();
  // header_num/header_bytes describe exactly what CopyHeaders will write.
  state.announced_headers = {headers.size(), headers.byteSize()};
  return static_cast<GolangStatus>(
      go::onHttpHeader(lib_, &state, end_stream, headers.size(), headers.byteSize()));
}

bool Filter::doHeaders(ProcessorState& state, HeaderMap& headers, bool end_stream) {
  state.headers = &headers;
  state.processHeader(end_stream); // state set before Go reads it
  GolangStatus status = doHeadersGo(state, headers, end_stream);
  bool done = state.handleHeaderGolangStatus(status);
  if (done) state.headers = nullptr; // headers move on; Go may no longer touch them
  return done;
}

bool Filter::doDataGo(ProcessorState& state, Buffer& data, bool end_stream) {
  state.processData(end_stream);
  Buffer& buffer = state.doDataList.push(data);
  state.onBufferDrained();
  GolangStatus status = static_cast<GolangStatus>(go::onHttpData(
      lib_, &state, end_stream, reinterpret_cast<uint64_t>(&buffer), buffer.length()));
  return state.handleDataGolangStatus(status);
}

bool Filter::doData(ProcessorState& state, Buffer& data, bool end_stream) {
  bool done = false;
  switch (state.filterState()) {
  case FilterState::WaitingData:
    done = doDataGo(state, data, end_stream);
    break;
  case FilterState::WaitingAllData:
    if (end_stream) {
      if (!state.isBufferDataEmpty()) {
        // new data = buffered data + this chunk
        state.addBufferData(data);
        data.move(state.getBufferData());
      }
      // The buffer may have overflowed into a 413/500 local reply above (GF:296-300).
      if (state.filterState() == FilterState::WaitingAllData && !hasDestroyed()) {
        done = doDataGo(state, data, end_stream);
      }
      break;
    }
    state.addBufferData(data);
    break;
  case FilterState::ProcessingHeader:
  case FilterState::ProcessingData:
    // Go is busy: keep the data for later.
    state.addBufferData(data);
    break;
  default:
    MOE_LOG(Error, "golang", "unexpected state: %s", state.stateStr().c_str());
    break;
  }
  return done;
}

bool Filter::doTrailerGo(ProcessorState& state, HeaderMap& trailers) {
  state.processTrailer();
  state.announced_trailers = {trailers.size(), trailers.byteSize()};
  GolangStatus status =
      static_cast<GolangStatus>(go::onHttpHeader(lib_, &state, true, trailers.size(), trailers.byteSize()));
  return state.handleTrailerGolangStatus(status);
}

bool Filter::doTrailer(ProcessorState& state, HeaderMap& trailers) {
  state.trailers = &trailers;
  bool done = false;
  switch (state.filterState()) {
  case FilterState::WaitingTrailer:
  case FilterState::WaitingData:
    done = doTrailerGo(state, trailers);
    break;
  case FilterState::WaitingAllData:
    // Deliver the buffered body first (end_stream=0: trailers follow).
    if (!state.isBufferDataEmpty()) {
      done = doDataGo(state, state.getBufferData(), false);
      if (state.filterState() == FilterState::WaitingTrailer) {
        state.continueDoData();
        if (hasDestroyed()) return false;
        done = doTrailerGo(state, trailers);
      }
    } else {
      state.continueDoData();
      if (hasDestroyed()) return false;
      done = doTrailerGo(state, trailers);
    }
    break;
  case FilterState::ProcessingHeader:
  case FilterState::ProcessingData:
    // Go is busy: the trailers are recorded and replayed by continueStatusInternal.
    break;
  default:
    MOE_LOG(Error, "golang", "unexpected state: %s", state.stateStr().c_str());
    break;
  }
  return done;
}

// ============================================================================================
// Filter: Go calling back (GF:391-1771)
// ============================================================================================

// GF:391-460: runs on the worker thread (always posted).
void Filter::continueStatusInternal(ProcessorState& state, GolangStatus status) {
  FilterState saved_state = state.filterState();
  bool done = state.handleGolangStatus(status);
  if (done) {
    switch (saved_state) {
    case FilterState::ProcessingHeader:
      // If the filter manager saw the end while Go did not, the data must go first: the next
      // filter would otherwise see end_stream on the headers. continueDoData below injects it
      // (headers forwarded with end_stream=false first).
      if (state.isProcessingEndStream() || !state.isStreamEnd()) state.continueProcessing();
      break;
    case FilterState::ProcessingData:
      state.continueDoData();
      break;
    case FilterState::ProcessingTrailer:
      state.continueDoData();
      if (hasDestroyed()) return;
      state.continueProcessing();
      break;
    default:
      MOE_LOG(Error, "golang", "unexpected state in continue: %s", state.stateStr().c_str());
      break;
    }
    if (hasDestroyed()) return;
  }

  // Replay input that arrived while Go was busy.
  FilterState current = state.filterState();
  if ((current == FilterState::WaitingData && (!state.isBufferDataEmpty() || state.getEndStream())) ||
      (current == FilterState::WaitingAllData && state.isStreamEnd())) {
    bool data_done = doDataGo(state, state.getBufferData(), state.getEndStream());
    if (data_done) {
      state.continueDoData();
      if (hasDestroyed()) return;
    } else {
      // Trailers wait until the data is done.
      return;
    }
  }
  if (state.filterState() == FilterState::WaitingTrailer && state.trailers != nullptr) {
    HeaderMap* trailers = state.trailers;
    if (doTrailerGo(state, *trailers)) state.continueProcessing();
  }
}

void Filter::sendLocalReplyInternal(ProcessorState& state, int code, const std::string& body,
                                    ModifyHeadersCb modify, int64_t grpc_status,
                                    const std::string& details) {
  // GF:462-480: drop what Go held, then reply.
  state.doDataList.clearAll();
  state.drainBufferData();
  // Envoy always passes Go's grpc_status as a set optional (cgo.cc:117-126), -1 included.
  state.sendLocalReply(code, body, std::move(modify), details, grpc_status);
}

CAPIStatus Filter::sendLocalReply(ProcessorState& state, int code, std::string body,
                                  std::vector<std::pair<std::string, std::string>> headers,
                                  int64_t grpc_status, std::string details) {
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  ModifyHeadersCb modify = [headers = std::move(headers)](HeaderMap& h) {
    // CGO:101-130: empty values are skipped; values are added, not set.
    for (auto& [k, v] : headers) {
      if (!v.empty()) h.addCopy(k, v);
    }
  };
  // Always posted: running it inline would re-enter the state machine before the status Go is
  // about to return has been handled (GF:487-505).
  ProcessorState* sp = &state;
  postIfAlive([this, sp, code, body = std::move(body), modify = std::move(modify), grpc_status,
               details = std::move(details)]() mutable {
    sendLocalReplyInternal(*sp, code, body, std::move(modify), grpc_status, details);
  });
  return CAPIOK;
}

CAPIStatus Filter::sendPanicReply(ProcessorState& state, std::string_view details) {
  config_->panicError().inc();
  MOE_LOG(Error, "golang", "[go_plugin_http][%s] filter paniced with error details: %.*s",
          config_->pluginName().c_str(), static_cast<int>(details.size()), details.data());
  return sendLocalReply(state, 500, "error happened in filter\r\n", {}, 0, "");
}

CAPIStatus Filter::continueStatus(ProcessorState& state, GolangStatus status) {
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  // Always posted (GF:520-544), even from the worker thread.
  ProcessorState* sp = &state;
  postIfAlive([this, sp, status] { continueStatusInternal(*sp, status); });
  return CAPIOK;
}

// GF:546-588.
CAPIStatus Filter::addData(ProcessorState& state, std::string_view data, bool is_streaming) {
  if (state.filterState() == FilterState::ProcessingData) {
    MOE_LOG(Error, "golang", "golang filter calls addData when processing data is not supported, "
                             "use `BufferInstance.Append` instead.");
    return CAPIInvalidPhase;
  }
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  if (isThreadSafe()) {
    Buffer b(data);
    state.addData(b, is_streaming);
    return CAPIOK;
  }
  ProcessorState* sp = &state;
  postIfAlive([sp, d = std::string(data), is_streaming] {
    Buffer b(d);
    sp->addData(b, is_streaming);
  });
  return CAPIYield;
}

// GF:590-629: only from a goroutine, only while processing data.
CAPIStatus Filter::injectData(ProcessorState& state, std::string_view data) {
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  if (state.filterState() != FilterState::ProcessingData) {
    MOE_LOG(Error, "golang", "injectData is not supported when calling without processing data, "
                             "use `addData` instead.");
    return CAPIInvalidPhase;
  }
  if (isThreadSafe()) {
    MOE_LOG(Error, "golang", "injectData is not supported when calling inside the callback context");
    return CAPIInvalidScene;
  }
  ProcessorState* sp = &state;
  postIfAlive([sp, d = std::string(data)] {
    Buffer b(d);
    sp->injectDataToFilterChain(b, false);
  });
  return CAPIOK;
}

CAPIStatus Filter::getHeader(ProcessorState& state, std::string_view key, uint64_t* value_data,
                             int* value_len) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  HeaderMap* m = state.headers;
  if (m == nullptr) return CAPIInvalidPhase;
  // The first value, no copy; outputs untouched when absent (GF:631-659).
  if (const std::string* v = m->get(key)) {
    *value_data = reinterpret_cast<uint64_t>(v->data());
    *value_len = static_cast<int>(v->size());
  }
  return CAPIOK;
}

namespace {
// GF:661-690: keys and values packed into buf with no separators; a value's pointer is only
// set when it is non-empty (Go may pass an invalid pointer for empty strings).
void copyHeaderMapToGo(const HeaderMap& m, GoString* strs, char* buf) {
  size_t i = 0;
  for (auto& [k, v] : m.entries()) {
    strs[i].n = static_cast<ptrdiff_t>(k.size());
    strs[i].p = buf;
    std::memcpy(buf, k.data(), k.size());
    buf += k.size();
    i++;
    strs[i].n = static_cast<ptrdiff_t>(v.size());
    if (!v.empty()) {
      strs[i].p = buf;
      std::memcpy(buf, v.data(), v.size());
      buf += v.size();
    }
    i++;
  }
}

bool isIpAuthority(std::string_view host) {
  std::string h(host);
  in6_addr a6;
  in_addr a4;
  auto isIp = [&](const std::string& s) {
    return inet_pton(AF_INET, s.c_str(), &a4) == 1 || inet_pton(AF_INET6, s.c_str(), &a6) == 1;
  };
  if (!h.empty() && h[0] == '[') {
    auto close = h.find(']');
    if (close == std::string::npos) return false;
    std::string ip = h.substr(1, close - 1);
    if (inet_pton(AF_INET6, ip.c_str(), &a6) != 1) return false;
    std::string rest = h.substr(close + 1);
    if (rest.empty()) return true;
    if (rest[0] != ':' || rest.size() < 2) return false;
    return rest.find_first_not_of("0123456789", 1) == std::string::npos;
  }
  if (isIp(h)) return true; // plain IPv4 or bare IPv6
  auto colon = h.rfind(':');
  if (colon == std::string::npos) return false;
  std::string port = h.substr(colon + 1);
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos) return false;
  return inet_pton(AF_INET, h.substr(0, colon).c_str(), &a4) == 1;
}
} // namespace

CAPIStatus Filter::copyHeaders(ProcessorState& state, GoString* strs, char* buf) {
  return copyMapToGo(state, &ProcessorState::headers, strs, buf);
}

CAPIStatus Filter::setHeader(ProcessorState& state, std::string_view key, std::string_view value,
                             headerAction act) {
  return setInMap(state, &ProcessorState::headers, key, value, act);
}

CAPIStatus Filter::removeHeader(ProcessorState& state, std::string_view key) {
  return removeFromMap(state, &ProcessorState::headers, key);
}

CAPIStatus Filter::copyBuffer(ProcessorState& state, Buffer* buffer, char* data) {
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  if (!state.doDataList.checkExisting(buffer)) return CAPIInvalidPhase;
  std::memcpy(data, buffer->data(), buffer->length());
  return CAPIOK;
}

CAPIStatus Filter::drainBuffer(ProcessorState& state, Buffer* buffer, uint64_t length) {
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  if (!state.doDataList.checkExisting(buffer)) return CAPIInvalidPhase;
  buffer->drain(length);
  return CAPIOK;
}

CAPIStatus Filter::setBufferHelper(ProcessorState& state, Buffer* buffer, std::string_view value,
                                   bufferAction action) {
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  if (!state.doDataList.checkExisting(buffer)) return CAPIInvalidPhase;
  if (action == Set) {
    buffer->drainAll();
    buffer->add(value);
  } else if (action == Prepend) {
    buffer->prepend(value);
  } else {
    buffer->add(value);
  }
  return CAPIOK;
}

// Trailers work like headers on state.trailers (GF:882-997).
CAPIStatus Filter::copyTrailers(ProcessorState& state, GoString* strs, char* buf) {
  return copyMapToGo(state, &ProcessorState::trailers, strs, buf);
}

CAPIStatus Filter::setTrailer(ProcessorState& state, std::string_view key, std::string_view value,
                              headerAction act) {
  return setInMap(state, &ProcessorState::trailers, key, value, act);
}

CAPIStatus Filter::removeTrailer(ProcessorState& state, std::string_view key) {
  return removeFromMap(state, &ProcessorState::trailers, key);
}

CAPIStatus Filter::copyMapToGo(ProcessorState& state, HeaderMap* ProcessorState::*which,
                               GoString* strs, char* buf) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  if (state.*which == nullptr) return CAPIInvalidPhase;
  // Envoy copies whatever the map holds now into buffers Go sized by the counts of the call that
  // handed the map over (GF:661-690, no bound). After an asynchronous header phase Envoy keeps
  // state.headers (doHeaders clears it only when the phase is done at once), and the router and
  // the connection manager change the maps meanwhile: a copy then writes past Go's buffers (or
  // leaves empty pairs). moe-host refuses it and says so loudly (tests fail on the line,
  // shared/testing/hosttest); Envoy would corrupt Go's heap.
  const HeaderMap& m = *(state.*which);
  const ProcessorState::Announced& a =
      which == &ProcessorState::headers ? state.announced_headers : state.announced_trailers;
  if (m.size() != a.num || m.byteSize() != a.bytes) {
    MOE_LOG(Error, "golang",
            "moe-host: stale header copy: Go copies a map of %zu entries, %llu bytes that it was "
            "handed with %llu entries, %llu bytes; Envoy would write past Go's buffer",
            m.size(), static_cast<unsigned long long>(m.byteSize()),
            static_cast<unsigned long long>(a.num), static_cast<unsigned long long>(a.bytes));
    return CAPIInvalidPhase;
  }
  copyHeaderMapToGo(m, strs, buf);
  return CAPIOK;
}

// GF:717-777: inline on the worker, posted from goroutines (Go keeps its own copy meanwhile).
CAPIStatus Filter::setInMap(ProcessorState& state, HeaderMap* ProcessorState::*which,
                            std::string_view key, std::string_view value, headerAction act) {
  // Under the mutex, and the posted write too: an off-thread GetHeader/CopyHeaders (which hold
  // it, GF:631-690) must not read the map while the worker grows it. Envoy (GF:717-777) posts
  // the write without the lock, a race the host does not copy.
  std::lock_guard<std::mutex> lock(mutex_);
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  HeaderMap* map = state.*which;
  if (map == nullptr) return CAPIInvalidPhase;
  auto apply = [map, act](const std::string& k, const std::string& v) {
    if (act == HeaderAdd) map->addCopy(lowerCase(k), v);
    else map->setCopy(lowerCase(k), v);
  };
  if (isThreadSafe()) {
    apply(std::string(key), std::string(value));
  } else {
    postIfAlive([this, apply, k = std::string(key), v = std::string(value)] {
      std::lock_guard<std::mutex> lock(mutex_);
      apply(k, v);
    });
  }
  return CAPIOK;
}

// GF:781-815: removes every value; inline or posted like setInMap.
CAPIStatus Filter::removeFromMap(ProcessorState& state, HeaderMap* ProcessorState::*which,
                                 std::string_view key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  HeaderMap* map = state.*which;
  if (map == nullptr) return CAPIInvalidPhase;
  if (isThreadSafe()) {
    map->remove(key);
  } else {
    postIfAlive([this, map, k = std::string(key)] {
      std::lock_guard<std::mutex> lock(mutex_);
      map->remove(k);
    });
  }
  return CAPIOK;
}

// GF:999-1047. Off the worker thread `strict` is lost (Envoy passes false).
CAPIStatus Filter::setUpstreamOverrideHost(ProcessorState& state, std::string_view host, bool strict) {
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!state.isProcessingInGo()) return CAPINotInGo;
  if (state.encoding()) return CAPIInvalidPhase;
  if (!isIpAuthority(host)) return CAPIInvalidIPAddress;
  if (isThreadSafe()) {
    streamInfo().upstream_override_host = std::make_pair(std::string(host), strict);
  } else {
    postIfAlive([this, h = std::string(host)] {
      streamInfo().upstream_override_host = std::make_pair(h, false);
    });
  }
  return CAPIOK;
}

CAPIStatus Filter::clearRouteCache(bool refresh) {
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (isThreadSafe()) {
    clearRouteCacheInternal(refresh);
  } else {
    postIfAlive([this, refresh] { clearRouteCacheInternal(refresh); });
  }
  return CAPIOK;
}

void Filter::clearRouteCacheInternal(bool refresh) {
  decoder_callbacks_->clearRouteCache();
  // The next route() re-matches with the current headers; refresh does it now.
  if (refresh) decoder_callbacks_->route();
}

// GF:1080-1160. Unknown ids abort, as Envoy's RELEASE_ASSERT.
CAPIStatus Filter::getIntegerValue(int id, uint64_t* value) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  StreamInfo& info = streamInfo();
  switch (id) {
  case 3: // Protocol
    *value = static_cast<uint64_t>(info.protocol);
    break;
  case 4: // ResponseCode
    if (!info.response_code) return CAPIValueNotFound;
    *value = *info.response_code;
    break;
  case 6: // AttemptCount
    if (!info.attempt_count) return CAPIValueNotFound;
    *value = *info.attempt_count;
    break;
  case 100: // SslConnectionExists: plain TCP only
    *value = 0;
    break;
  case 101: case 102: case 103: case 104: case 105: // need an SSL connection
    return CAPIValueNotFound;
  default:
    MOE_LOG(Critical, "golang", "invalid integer value id: %d", id);
    std::abort();
  }
  return CAPIOK;
}

// GF:1162-1368.
CAPIStatus Filter::getStringValue(int id, uint64_t* value_data, int* value_len) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  StreamInfo& info = streamInfo();
  switch (id) {
  case 1: req_->strValue = info.route_name; break;
  case 2: req_->strValue = info.filter_chain_name; break;
  case 5:
    if (!info.response_code_details) return CAPIValueNotFound;
    req_->strValue = *info.response_code_details;
    break;
  case 7: req_->strValue = info.downstream.local_str; break;
  case 8: req_->strValue = info.downstream.remote_str; break;
  case 9:
    if (!info.upstream_local_address) return CAPIValueNotFound;
    req_->strValue = *info.upstream_local_address;
    break;
  case 10:
    if (!info.upstream_remote_address) return CAPIValueNotFound;
    req_->strValue = *info.upstream_remote_address;
    break;
  case 11:
    if (!info.upstream_cluster) return CAPIValueNotFound;
    req_->strValue = *info.upstream_cluster;
    break;
  case 12: // VirtualClusterName: virtual clusters are not supported
    return CAPIValueNotFound;
  default:
    if (id >= 106 && id <= 119) return CAPIValueNotFound; // SSL strings: no TLS
    MOE_LOG(Critical, "golang", "invalid string value id: %d", id);
    std::abort();
  }
  *value_data = reinterpret_cast<uint64_t>(req_->strValue.data());
  *value_len = static_cast<int>(req_->strValue.size());
  return CAPIOK;
}

void Filter::populateMetadata(const std::string& name, uint64_t* data, int* len) {
  auto& md = streamInfo().dynamic_metadata;
  auto it = md.find(name);
  if (it == md.end()) return; // outputs untouched when absent
  req_->strValue = proto::encodeStruct(it->second);
  *data = reinterpret_cast<uint64_t>(req_->strValue.data());
  *len = static_cast<int>(req_->strValue.size());
}

// GF:1370-1409: off-thread -> post, Yield, fill outputs, SemaDec.
CAPIStatus Filter::getDynamicMetadata(const std::string& name, uint64_t* data, int* len) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!isThreadSafe()) {
    postIfAlive([this, name, data, len] {
      populateMetadata(name, data, len);
      go::requestSemaDec(lib_, &req_->req);
    });
    return CAPIYield;
  }
  populateMetadata(name, data, len);
  return CAPIOK;
}

// GF:1411-1448: merge {key: value} into filter_metadata[name].
CAPIStatus Filter::setDynamicMetadata(std::string name, std::string key, std::string_view value) {
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (!isThreadSafe()) {
    postIfAlive([this, name, key, v = std::string(value)] {
      streamInfo().dynamic_metadata[name][key] = v;
    });
    return CAPIOK;
  }
  streamInfo().dynamic_metadata[name][key] = std::string(value);
  return CAPIOK;
}

// GF:1450-1477: state_type/life_span/stream_sharing are accepted and ignored.
CAPIStatus Filter::setStringFilterState(std::string_view key, std::string_view value) {
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (isThreadSafe()) {
    streamInfo().filter_state[std::string(key)] = std::string(value);
  } else {
    postIfAlive([this, k = std::string(key), v = std::string(value)] {
      streamInfo().filter_state[k] = v;
    });
  }
  return CAPIOK;
}

CAPIStatus Filter::getStringFilterState(std::string_view key, uint64_t* data, int* len) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  auto fill = [this, data, len](const std::string& k) {
    auto& fs = streamInfo().filter_state;
    auto it = fs.find(k);
    if (it != fs.end()) {
      req_->strValue = it->second;
      *data = reinterpret_cast<uint64_t>(req_->strValue.data());
      *len = static_cast<int>(req_->strValue.size());
    }
  };
  if (isThreadSafe()) {
    fill(std::string(key));
    return CAPIOK;
  }
  postIfAlive([this, fill, k = std::string(key)] {
    fill(k);
    go::requestSemaDec(lib_, &req_->req);
  });
  return CAPIYield;
}

CAPIStatus Filter::getStringPropertyCommon(std::string_view path, uint64_t* data, int* len) {
  PropertyContext ctx{streamInfo()};
  ctx.request_headers = request_headers_;
  ctx.response_headers = response_headers_;
  ctx.response_trailers = response_trailers_;
  // Envoy's StreamActivation reads the stream info as it is (golang_filter.cc:1545-1554): no route
  // resolution here. After ClearRouteCache without refresh, xds.route_name and xds.cluster_name
  // still answer the previous route until something calls route() (a later filter, the router,
  // RefreshRouteCache), because clearRouteCache leaves the stream info alone
  // (conn_manager_impl.cc:2468-2477).
  ctx.request_body_bytes = streamInfo().bytes_received;
  ctx.response_body_bytes = streamInfo().bytes_sent;
  CAPIStatus status = getProperty(ctx, path, &req_->strValue);
  if (status == CAPIOK) {
    *data = reinterpret_cast<uint64_t>(req_->strValue.data());
    *len = static_cast<int>(req_->strValue.size());
  }
  return status;
}

// GF:1517-1560: off-thread -> Yield, the real status goes to *rc, then SemaDec.
CAPIStatus Filter::getStringProperty(std::string_view path, uint64_t* data, int* len, int* rc) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  if (isThreadSafe()) return getStringPropertyCommon(path, data, len);
  postIfAlive([this, p = std::string(path), data, len, rc] {
    *rc = getStringPropertyCommon(p, data, len);
    go::requestSemaDec(lib_, &req_->req);
  });
  return CAPIYield;
}

// GF:1717-1756: *len = -1 means not found.
CAPIStatus Filter::getSecret(std::string_view name, uint64_t* data, int* len) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  auto fill = [this, data, len](const std::string& n) {
    const std::string* s = config_->secret(n);
    if (s == nullptr) {
      *len = -1;
    } else {
      req_->strValue = *s;
      *data = reinterpret_cast<uint64_t>(req_->strValue.data());
      *len = static_cast<int>(req_->strValue.size());
    }
  };
  if (isThreadSafe()) {
    fill(std::string(name));
    return CAPIOK;
  }
  postIfAlive([this, fill, n = std::string(name)] {
    fill(n);
    go::requestSemaDec(lib_, &req_->req);
  });
  return CAPIYield;
}

CAPIStatus Filter::setDrainConnectionUponCompletion() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hasDestroyed()) return CAPIFilterIsDestroy;
  streamInfo().drain_connection_upon_completion = true;
  return CAPIOK;
}

// GF:1694-1701: configId is fixed on the first header or log event.
bool Filter::initRequest() {
  if (req_->req.configId == 0) {
    req_->filter = weak_from_this();
    req_->req.configId = getMergedConfigId();
    return true;
  }
  return false;
}

// GF:1774-1787: filter config id merged with each per-route config, least specific first.
uint64_t Filter::getMergedConfigId() {
  uint64_t id = config_->configId();
  MatchedRouteConstSharedPtr route = decoder_callbacks_->route();
  if (!route) return id;
  for (auto* plugins : route->perFilterConfigs(config_->filterName())) {
    auto it = plugins->find(config_->pluginName());
    if (it != plugins->end()) {
      id = RoutePluginConfigs::mergedConfigId(it->second, config_->pluginName(), id);
    }
  }
  return id;
}

#if defined(__SANITIZE_ADDRESS__)
void trackGoHeldRequest(HttpRequestInternal* req, bool held) {
  // Process-wide on purpose: it stands for Go's heap, which is process-wide too.
  static std::mutex mu;
  static auto* live = new std::unordered_set<HttpRequestInternal*>();
  std::lock_guard<std::mutex> lock(mu);
  if (held) live->insert(req); else live->erase(req);
}
#else
void trackGoHeldRequest(HttpRequestInternal*, bool) {}
#endif

// CGO:303-321 for a still-alive filter: free on the worker after the current event.
void Filter::deferredDeleteRequest(HttpRequestInternal* req) {
  Dispatcher* d = dispatcher_;
  if (d->isThreadSafe()) {
    d->deferredDelete([req] { delete req; });
  } else {
    d->post([d, req] { d->deferredDelete([req] { delete req; }); });
  }
}

} // namespace moe::golang
