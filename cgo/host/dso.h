// dso: loads golang-filter libraries like Envoy's contrib/golang/common/dso (DSO.cc:26-71):
// dlopen(RTLD_LAZY) once per library_id, dlsym the 10 Go entry points (all required), never
// dlclose (a Go runtime cannot be unloaded), and remember plugin_name -> library so per-route
// configs can find the library by plugin name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "golang_abi.h"

namespace moe::golang {

// Pointers to the Go-exported functions (contrib/golang/common/dso/libgolang.h:98-144).
struct GoLibrary {
  std::string id, path;
  uint64_t (*newHttpPluginConfig)(httpConfig* p0) = nullptr;
  uint64_t (*mergeHttpPluginConfig)(uint64_t name_ptr, uint64_t name_len, uint64_t parent_id,
                                    uint64_t child_id) = nullptr;
  void (*destroyHttpPluginConfig)(uint64_t id, int64_t need_delay) = nullptr;
  uint64_t (*onHttpHeader)(processState* s, uint64_t end_stream, uint64_t header_num,
                           uint64_t header_bytes) = nullptr;
  uint64_t (*onHttpData)(processState* s, uint64_t end_stream, uint64_t buffer,
                         uint64_t length) = nullptr;
  void (*onHttpLog)(httpRequest* r, uint64_t type, processState* dec, processState* enc,
                    uint64_t req_header_num, uint64_t req_header_bytes, uint64_t req_trailer_num,
                    uint64_t req_trailer_bytes, uint64_t resp_header_num,
                    uint64_t resp_header_bytes, uint64_t resp_trailer_num,
                    uint64_t resp_trailer_bytes) = nullptr;
  void (*onHttpStreamComplete)(httpRequest* r) = nullptr;
  void (*onHttpDestroy)(httpRequest* r, uint64_t reason) = nullptr;
  void (*requestSemaDec)(httpRequest* r) = nullptr;
  void (*cleanUp)() = nullptr;
};

// Loads (or returns the already loaded) library for library_id and maps plugin_name to it.
// Throws std::runtime_error naming the id, path and missing symbol on failure.
GoLibrary* loadGoLibrary(const std::string& library_id, const std::string& library_path,
                         const std::string& plugin_name);
// nullptr when no filter config loaded a library for this plugin name.
GoLibrary* goLibraryByPluginName(const std::string& plugin_name);
// Every loaded library (for shutdown-time clean-up).
std::vector<GoLibrary*> loadedGoLibraries();

} // namespace moe::golang
