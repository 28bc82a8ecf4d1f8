// go_calls: every call from the host into Go goes through here, so each crossing increments
// moe_host.go.<entry> (tests count crossings per request with these counters).
#pragma once
#include "dso.h"
#include "stats.h"

namespace moe::golang::go {

#define MOE_GO_COUNTER(name)                                                                   \
  static Counter& counter = stats().counter("moe_host.go." name);                              \
  counter.inc()

inline uint64_t newHttpPluginConfig(GoLibrary& lib, httpConfig* c) {
  MOE_GO_COUNTER("new_http_plugin_config");
  return lib.newHttpPluginConfig(c);
}
inline uint64_t mergeHttpPluginConfig(GoLibrary& lib, const std::string& name, uint64_t parent,
                                      uint64_t child) {
  MOE_GO_COUNTER("merge_http_plugin_config");
  return lib.mergeHttpPluginConfig(reinterpret_cast<uint64_t>(name.data()), name.size(), parent,
                                   child);
}
inline void destroyHttpPluginConfig(GoLibrary& lib, uint64_t id, int64_t need_delay) {
  MOE_GO_COUNTER("destroy_http_plugin_config");
  lib.destroyHttpPluginConfig(id, need_delay);
}
inline uint64_t onHttpHeader(GoLibrary& lib, processState* s, bool end_stream, uint64_t num,
                             uint64_t bytes) {
  MOE_GO_COUNTER("on_http_header");
  return lib.onHttpHeader(s, end_stream ? 1 : 0, num, bytes);
}
inline uint64_t onHttpData(GoLibrary& lib, processState* s, bool end_stream, uint64_t buffer,
                           uint64_t length) {
  MOE_GO_COUNTER("on_http_data");
  return lib.onHttpData(s, end_stream ? 1 : 0, buffer, length);
}
inline void onHttpLog(GoLibrary& lib, httpRequest* r, uint64_t type, processState* dec,
                      processState* enc, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                      uint64_t e, uint64_t f, uint64_t g, uint64_t h) {
  MOE_GO_COUNTER("on_http_log");
  lib.onHttpLog(r, type, dec, enc, a, b, c, d, e, f, g, h);
}
inline void onHttpStreamComplete(GoLibrary& lib, httpRequest* r) {
  MOE_GO_COUNTER("on_http_stream_complete");
  lib.onHttpStreamComplete(r);
}
inline void onHttpDestroy(GoLibrary& lib, httpRequest* r, uint64_t reason) {
  MOE_GO_COUNTER("on_http_destroy");
  lib.onHttpDestroy(r, reason);
}
inline void requestSemaDec(GoLibrary& lib, httpRequest* r) {
  MOE_GO_COUNTER("request_sema_dec");
  lib.requestSemaDec(r);
}

#undef MOE_GO_COUNTER

} // namespace moe::golang::go
