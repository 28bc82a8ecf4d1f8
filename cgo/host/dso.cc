#include "dso.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "logger.h"

namespace moe::golang {
namespace {

std::mutex g_mu;
// Libraries are never freed: Envoy keeps handles forever (DSO.h:274-278).
std::map<std::string, std::unique_ptr<GoLibrary>>& byId() {
  static auto* m = new std::map<std::string, std::unique_ptr<GoLibrary>>();
  return *m;
}
std::map<std::string, GoLibrary*>& byPlugin() {
  static auto* m = new std::map<std::string, GoLibrary*>();
  return *m;
}

template <class Fn> void resolve(void* handle, GoLibrary& lib, const char* name, Fn& out) {
  void* sym = dlsym(handle, name);
  if (sym == nullptr) {
    throw std::runtime_error("golang_filter: library " + lib.id + " (" + lib.path +
                             ") lacks symbol " + name);
  }
  out = reinterpret_cast<Fn>(sym);
}

} // namespace

GoLibrary* loadGoLibrary(const std::string& library_id, const std::string& library_path,
                         const std::string& plugin_name) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = byId().find(library_id);
  if (it != byId().end()) {
    byPlugin()[plugin_name] = it->second.get();
    return it->second.get();
  }
  // RTLD_LAZY as DSO.cc:26: the .so's undefined envoyGo* imports bind to our -rdynamic exports
  // on first call.
  void* handle = dlopen(library_path.c_str(), RTLD_LAZY);
  if (handle == nullptr) {
    const char* err = dlerror();
    throw std::runtime_error("golang_filter: load library failed: " + library_id + " " +
                             library_path + ": " + (err ? err : "unknown error"));
  }
  auto lib = std::make_unique<GoLibrary>();
  lib->id = library_id;
  lib->path = library_path;
  resolve(handle, *lib, "envoyGoFilterNewHttpPluginConfig", lib->newHttpPluginConfig);
  resolve(handle, *lib, "envoyGoFilterMergeHttpPluginConfig", lib->mergeHttpPluginConfig);
  resolve(handle, *lib, "envoyGoFilterDestroyHttpPluginConfig", lib->destroyHttpPluginConfig);
  resolve(handle, *lib, "envoyGoFilterOnHttpHeader", lib->onHttpHeader);
  resolve(handle, *lib, "envoyGoFilterOnHttpData", lib->onHttpData);
  resolve(handle, *lib, "envoyGoFilterOnHttpLog", lib->onHttpLog);
  resolve(handle, *lib, "envoyGoFilterOnHttpStreamComplete", lib->onHttpStreamComplete);
  resolve(handle, *lib, "envoyGoFilterOnHttpDestroy", lib->onHttpDestroy);
  resolve(handle, *lib, "envoyGoRequestSemaDec", lib->requestSemaDec);
  resolve(handle, *lib, "envoyGoFilterCleanUp", lib->cleanUp);
  MOE_LOG(Info, "golang", "loaded library %s from %s", library_id.c_str(), library_path.c_str());
  GoLibrary* raw = lib.get();
  byId()[library_id] = std::move(lib);
  byPlugin()[plugin_name] = raw;
  return raw;
}

GoLibrary* goLibraryByPluginName(const std::string& plugin_name) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = byPlugin().find(plugin_name);
  return it == byPlugin().end() ? nullptr : it->second;
}

std::vector<GoLibrary*> loadedGoLibraries() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<GoLibrary*> out;
  for (auto& [id, lib] : byId()) out.push_back(lib.get());
  return out;
}

} // namespace moe::golang
