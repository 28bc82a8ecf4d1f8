// capi: the 34 C functions a v1.39.0 golang-filter .so imports (api.h:79-141), resolved from this
// executable (-rdynamic). Thin: the wrappers check the pointers Go passes (CGO:54-92), count the
// crossing in moe_host.capi.<name>, and delegate to golang::Filter / FilterConfig.
#include <cstring>
#include <string>
#include <vector>

#include "golang_filter.h"
#include "logger.h"
#include "stats.h"

using moe::golang::Filter;
using moe::golang::FilterConfig;
using moe::golang::GolangStatus;
using moe::golang::HttpConfigInternal;
using moe::golang::HttpRequestInternal;
using moe::golang::ProcessorState;

namespace {

#define MOE_CAPI_COUNT(name)                                                                   \
  static moe::Counter& capi_counter = moe::stats().counter("moe_host.capi." name);             \
  capi_counter.inc()

std::string_view goView(void* data, int len) {
  if (data == nullptr || len <= 0) return {};
  return std::string_view(static_cast<const char*>(data), static_cast<size_t>(len));
}

// `s` APIs: the state must be in Go, then the filter must still exist.
template <class Fn> CAPIStatus withState(void* s, Fn fn) {
  auto* state = static_cast<ProcessorState*>(reinterpret_cast<processState*>(s));
  if (!state->isProcessingInGo()) return CAPINotInGo;
  auto* req = reinterpret_cast<HttpRequestInternal*>(state->req);
  if (auto filter = req->filter.lock()) return fn(*filter, *state);
  return CAPIFilterIsGone;
}

// `r` APIs: the filter must exist, then one of its states must be in Go.
template <class Fn> CAPIStatus withRequest(void* r, Fn fn) {
  auto* req = reinterpret_cast<HttpRequestInternal*>(r);
  if (auto filter = req->filter.lock()) {
    if (!filter->isProcessingInGo()) return CAPINotInGo;
    return fn(*filter);
  }
  return CAPIFilterIsGone;
}

// `c` APIs: the filter config must still exist.
template <class Fn> CAPIStatus withConfig(void* c, Fn fn) {
  auto* config = reinterpret_cast<HttpConfigInternal*>(c);
  if (auto fc = config->filter_config.lock()) return fn(*fc);
  return CAPIFilterIsGone;
}

} // namespace

extern "C" {

// ---- process flow (s) ----

CAPIStatus envoyGoFilterHttpContinue(void* s, int status) {
  MOE_CAPI_COUNT("continue");
  return withState(s, [status](Filter& f, ProcessorState& st) {
    return f.continueStatus(st, static_cast<GolangStatus>(status));
  });
}

CAPIStatus envoyGoFilterHttpSendLocalReply(void* s, int response_code, void* body_text_data,
                                           int body_text_len, void* headers, int headers_num,
                                           long long int grpc_status, void* details_data,
                                           int details_len) {
  MOE_CAPI_COUNT("send_local_reply");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    // headers: GoString[headers_num] of alternating keys and values (CGO:35-48).
    std::vector<std::pair<std::string, std::string>> hv;
    auto* strs = static_cast<GoString*>(headers);
    for (int i = 0; i + 1 < headers_num; i += 2) {
      hv.emplace_back(std::string(strs[i].p, strs[i].n), std::string(strs[i + 1].p, strs[i + 1].n));
    }
    return f.sendLocalReply(st, response_code, std::string(goView(body_text_data, body_text_len)),
                            std::move(hv), grpc_status,
                            std::string(goView(details_data, details_len)));
  });
}

CAPIStatus envoyGoFilterHttpSendPanicReply(void* s, void* details_data, int details_len) {
  MOE_CAPI_COUNT("send_panic_reply");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.sendPanicReply(st, goView(details_data, details_len));
  });
}

CAPIStatus envoyGoFilterHttpAddData(void* s, void* data, int data_len, bool is_streaming) {
  MOE_CAPI_COUNT("add_data");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.addData(st, goView(data, data_len), is_streaming);
  });
}

CAPIStatus envoyGoFilterHttpInjectData(void* s, void* data, int data_len) {
  MOE_CAPI_COUNT("inject_data");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.injectData(st, goView(data, data_len));
  });
}

// ---- headers (s) ----

CAPIStatus envoyGoFilterHttpGetHeader(void* s, void* key_data, int key_len, uint64_t* value_data,
                                      int* value_len) {
  MOE_CAPI_COUNT("get_header");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.getHeader(st, goView(key_data, key_len), value_data, value_len);
  });
}

CAPIStatus envoyGoFilterHttpCopyHeaders(void* s, void* strs, void* buf) {
  MOE_CAPI_COUNT("copy_headers");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.copyHeaders(st, static_cast<GoString*>(strs), static_cast<char*>(buf));
  });
}

CAPIStatus envoyGoFilterHttpSetHeaderHelper(void* s, void* key_data, int key_len, void* value_data,
                                            int value_len, headerAction action) {
  MOE_CAPI_COUNT("set_header_helper");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.setHeader(st, goView(key_data, key_len), goView(value_data, value_len), action);
  });
}

CAPIStatus envoyGoFilterHttpRemoveHeader(void* s, void* key_data, int key_len) {
  MOE_CAPI_COUNT("remove_header");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.removeHeader(st, goView(key_data, key_len));
  });
}

// ---- buffers (s) ----

CAPIStatus envoyGoFilterHttpGetBuffer(void* s, uint64_t buffer, void* value) {
  MOE_CAPI_COUNT("get_buffer");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.copyBuffer(st, reinterpret_cast<moe::Buffer*>(buffer), static_cast<char*>(value));
  });
}

CAPIStatus envoyGoFilterHttpDrainBuffer(void* s, uint64_t buffer, uint64_t length) {
  MOE_CAPI_COUNT("drain_buffer");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.drainBuffer(st, reinterpret_cast<moe::Buffer*>(buffer), length);
  });
}

CAPIStatus envoyGoFilterHttpSetBufferHelper(void* s, uint64_t buffer, void* data, int length,
                                            bufferAction action) {
  MOE_CAPI_COUNT("set_buffer_helper");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.setBufferHelper(st, reinterpret_cast<moe::Buffer*>(buffer), goView(data, length),
                             action);
  });
}

// ---- trailers (s) ----

CAPIStatus envoyGoFilterHttpCopyTrailers(void* s, void* strs, void* buf) {
  MOE_CAPI_COUNT("copy_trailers");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.copyTrailers(st, static_cast<GoString*>(strs), static_cast<char*>(buf));
  });
}

CAPIStatus envoyGoFilterHttpSetTrailer(void* s, void* key_data, int key_len, void* value,
                                       int value_len, headerAction action) {
  MOE_CAPI_COUNT("set_trailer");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.setTrailer(st, goView(key_data, key_len), goView(value, value_len), action);
  });
}

CAPIStatus envoyGoFilterHttpRemoveTrailer(void* s, void* key_data, int key_len) {
  MOE_CAPI_COUNT("remove_trailer");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.removeTrailer(st, goView(key_data, key_len));
  });
}

CAPIStatus envoyGoFilterHttpSetUpstreamOverrideHost(void* s, void* host_data, int host_len,
                                                    bool strict) {
  MOE_CAPI_COUNT("set_upstream_override_host");
  return withState(s, [&](Filter& f, ProcessorState& st) {
    return f.setUpstreamOverrideHost(st, goView(host_data, host_len), strict);
  });
}

// ---- request scoped (r) ----

CAPIStatus envoyGoFilterHttpClearRouteCache(void* r, bool refresh) {
  MOE_CAPI_COUNT("clear_route_cache");
  return withRequest(r, [&](Filter& f) { return f.clearRouteCache(refresh); });
}

CAPIStatus envoyGoFilterHttpGetStringValue(void* r, int id, uint64_t* value_data, int* value_len) {
  MOE_CAPI_COUNT("get_string_value");
  return withRequest(r, [&](Filter& f) { return f.getStringValue(id, value_data, value_len); });
}

CAPIStatus envoyGoFilterHttpGetIntegerValue(void* r, int id, uint64_t* value) {
  MOE_CAPI_COUNT("get_integer_value");
  return withRequest(r, [&](Filter& f) { return f.getIntegerValue(id, value); });
}

CAPIStatus envoyGoFilterHttpGetDynamicMetadata(void* r, void* name_data, int name_len,
                                               uint64_t* value_data, int* value_len) {
  MOE_CAPI_COUNT("get_dynamic_metadata");
  return withRequest(r, [&](Filter& f) {
    return f.getDynamicMetadata(std::string(goView(name_data, name_len)), value_data, value_len);
  });
}

CAPIStatus envoyGoFilterHttpSetDynamicMetadata(void* r, void* name_data, int name_len,
                                               void* key_data, int key_len, void* buf_data,
                                               int buf_len) {
  MOE_CAPI_COUNT("set_dynamic_metadata");
  return withRequest(r, [&](Filter& f) {
    return f.setDynamicMetadata(std::string(goView(name_data, name_len)),
                                std::string(goView(key_data, key_len)), goView(buf_data, buf_len));
  });
}

// CGO:303-321: from Go's GC finalizer, any thread.
void envoyGoFilterHttpFinalize(void* r, int /*reason*/) {
  MOE_CAPI_COUNT("finalize");
  auto* req = reinterpret_cast<HttpRequestInternal*>(r);
  if (auto filter = req->filter.lock()) {
    // Rare (GC ran before the stream was gone): free on the worker after the current event.
    filter->deferredDeleteRequest(req);
  } else {
    delete req;
  }
}

CAPIStatus envoyGoFilterHttpSetStringFilterState(void* r, void* key_data, int key_len,
                                                 void* value_data, int value_len,
                                                 int /*state_type*/, int /*life_span*/,
                                                 int /*stream_sharing*/) {
  MOE_CAPI_COUNT("set_string_filter_state");
  return withRequest(r, [&](Filter& f) {
    return f.setStringFilterState(goView(key_data, key_len), goView(value_data, value_len));
  });
}

CAPIStatus envoyGoFilterHttpGetStringFilterState(void* r, void* key_data, int key_len,
                                                 uint64_t* value_data, int* value_len) {
  MOE_CAPI_COUNT("get_string_filter_state");
  return withRequest(r, [&](Filter& f) {
    return f.getStringFilterState(goView(key_data, key_len), value_data, value_len);
  });
}

CAPIStatus envoyGoFilterHttpGetStringProperty(void* r, void* key_data, int key_len,
                                              uint64_t* value_data, int* value_len, int* rc) {
  MOE_CAPI_COUNT("get_string_property");
  return withRequest(r, [&](Filter& f) {
    return f.getStringProperty(goView(key_data, key_len), value_data, value_len, rc);
  });
}

CAPIStatus envoyGoFilterHttpGetStringSecret(void* r, void* key_data, int key_len,
                                            uint64_t* value_data, int* value_len) {
  MOE_CAPI_COUNT("get_string_secret");
  return withRequest(r, [&](Filter& f) {
    return f.getSecret(goView(key_data, key_len), value_data, value_len);
  });
}

CAPIStatus envoyGoFilterHttpSetDrainConnectionUponCompletion(void* r) {
  MOE_CAPI_COUNT("set_drain_connection_upon_completion");
  return withRequest(r, [](Filter& f) { return f.setDrainConnectionUponCompletion(); });
}

// ---- logging ----

void envoyGoFilterLog(uint32_t level, void* message_data, int message_len) {
  MOE_CAPI_COUNT("log");
  if (level >= moe::Off) return;
  // FilterLogger::log (contrib/golang/common/log/cgo.cc) logs through the "golang" logger.
  if (level < moe::golangLogLevel()) return;
  moe::logMessage(level, "golang", goView(message_data, message_len));
}

uint32_t envoyGoFilterLogLevel() {
  MOE_CAPI_COUNT("log_level");
  return moe::golangLogLevel();
}

// ---- config scoped (c) ----

void envoyGoConfigHttpFinalize(void* c) {
  MOE_CAPI_COUNT("config_finalize");
  delete reinterpret_cast<HttpConfigInternal*>(c);
}

CAPIStatus envoyGoFilterHttpDefineMetric(void* c, uint32_t metric_type, void* name_data,
                                         int name_len, uint32_t* metric_id) {
  MOE_CAPI_COUNT("define_metric");
  return withConfig(c, [&](FilterConfig& fc) {
    return fc.metrics().define(metric_type, std::string(goView(name_data, name_len)), metric_id);
  });
}

CAPIStatus envoyGoFilterHttpIncrementMetric(void* c, uint32_t metric_id, int64_t offset) {
  MOE_CAPI_COUNT("increment_metric");
  return withConfig(c, [&](FilterConfig& fc) { return fc.metrics().increment(metric_id, offset); });
}

CAPIStatus envoyGoFilterHttpGetMetric(void* c, uint32_t metric_id, uint64_t* value) {
  MOE_CAPI_COUNT("get_metric");
  return withConfig(c, [&](FilterConfig& fc) { return fc.metrics().get(metric_id, value); });
}

CAPIStatus envoyGoFilterHttpRecordMetric(void* c, uint32_t metric_id, uint64_t value) {
  MOE_CAPI_COUNT("record_metric");
  return withConfig(c, [&](FilterConfig& fc) { return fc.metrics().record(metric_id, value); });
}

} // extern "C"
