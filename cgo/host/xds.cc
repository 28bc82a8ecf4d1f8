#include "xds.h"

#include <sys/stat.h>

#include <stdexcept>

#include "logger.h"
#include "moectl_runner.h"

namespace moe {

XdsContext& xdsContext() {
  static XdsContext ctx;
  return ctx;
}

namespace {

// FNV-1a 64: the "version" gauge only has to change when version_info does (Envoy sets it to
// xxHash64(version_info)); stats print gauges as signed, so the top bit is cleared.
int64_t versionHash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h & 0x7fffffffffffffffull);
}

// moectl's exit status for a file it could not read or parse (cmd/moectl/compile.go).
constexpr int kExitUnreadable = 3;

} // namespace

FilesystemSubscription::FilesystemSubscription(FileWatcher& watcher, const bootstrap::ConfigSource& source,
                                               std::string kind, const std::string& stat_prefix,
                                               std::string bootstrap_path, OnUpdate on_update)
    : watcher_(watcher), source_(source), kind_(std::move(kind)), bootstrap_path_(std::move(bootstrap_path)),
      on_update_(std::move(on_update)),
      update_attempt_(stats().counter(stat_prefix + "update_attempt")),
      update_success_(stats().counter(stat_prefix + "update_success")),
      update_failure_(stats().counter(stat_prefix + "update_failure")),
      update_rejected_(stats().counter(stat_prefix + "update_rejected")),
      init_fetch_timeout_(stats().counter(stat_prefix + "init_fetch_timeout")),
      update_time_(stats().gauge(stat_prefix + "update_time")),
      version_(stats().gauge(stat_prefix + "version")),
      update_duration_(stats().histogram(stat_prefix + "update_duration")) {
  // subscription_factory_impl.cc: checkFilesystemSubscriptionBackingPath.
  struct stat st;
  if (::stat(source_.path.c_str(), &st) != 0)
    throw std::runtime_error("paths must refer to an existing path in the system: '" + source_.path +
                             "' does not exist");
  auto cb = [this](uint32_t) {
    if (started_) refresh();
  };
  if (source_.watched_directory.empty()) {
    watch_id_ = watcher.addWatch(source_.path, FileWatcher::MovedTo, cb);
  } else {
    uint32_t events = FileWatcher::MovedTo;
    if (source_.watch_modify) events |= FileWatcher::Modified;
    watch_id_ = watcher.addWatch(source_.watched_directory + "/", events, cb);
  }
}

FilesystemSubscription::~FilesystemSubscription() { watcher_.removeWatch(watch_id_); }

void FilesystemSubscription::start() {
  started_ = true;
  refresh();
}

void FilesystemSubscription::refresh() {
  MOE_LOG(Debug, "config", "Filesystem config refresh for %s", source_.path.c_str());
  update_attempt_.inc();
  auto begin = std::chrono::steady_clock::now();
  std::vector<std::string> args{"compile", "--skip-plugin-check"};
  if (!bootstrap_path_.empty()) {
    args.push_back("-c");
    args.push_back(bootstrap_path_);
  }
  args.push_back("--" + kind_);
  args.push_back(source_.path);
  // Plugin configs are not checked by moectl here: the golang filter hands them to Go, whose
  // parser accepts or rejects them (config id 0), as in Envoy.
  MoectlResult res;
  try {
    res = runMoectl(args);
  } catch (const std::exception& e) {
    MOE_LOG(Warn, "config", "Filesystem config update failure: in %s, %s", source_.path.c_str(), e.what());
    update_failure_.inc();
    return;
  }
  if (res.exit_code == kExitUnreadable) {
    // filesystem_subscription_impl.cc refresh(): the file could not be loaded at all.
    MOE_LOG(Warn, "config", "Filesystem config update failure: in %s (moectl above)", source_.path.c_str());
    update_failure_.inc();
    return;
  }
  std::string error;
  bootstrap::Resources resources;
  if (res.exit_code != 0) {
    error = "moectl compile --" + kind_ + " " + source_.path + " failed (exit status " +
            std::to_string(res.exit_code) + "; its messages are above)";
  } else {
    try {
      resources = bootstrap::parseResourcesJson(res.out);
      error = on_update_(resources);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!error.empty()) {
    // configRejected(): logged, counted; the previous config keeps serving.
    MOE_LOG(Warn, "config", "Filesystem config update rejected: %s", error.c_str());
    update_rejected_.inc();
    return;
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - begin);
  update_duration_.record(static_cast<uint64_t>(ms.count()));
  update_time_.set(std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count());
  version_info_ = resources.version_info;
  version_.set(versionHash(version_info_));
  update_success_.inc();
  MOE_LOG(Info, "config", "Filesystem config update accepted for %s: version %s", source_.path.c_str(),
          version_info_.c_str());
}

} // namespace moe
