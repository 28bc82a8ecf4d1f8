// Filesystem xDS subscriptions (Envoy: source/extensions/config_subscription/filesystem/
// filesystem_subscription_impl.cc, source/common/config/watched_directory.cc): a file holding
// a DiscoveryResponse, read at start and again whenever a file is moved onto the path (or, with
// watched_directory, into that directory; with watch_modify also when it is written in place).
// The file is compiled by `moectl compile -c BOOTSTRAP --lds|--cds|--rds FILE` (decoding and
// validation with Envoy's protos); the owner applies the compiled resources.
//
// Stats under the subscription's prefix, as Envoy's SubscriptionStats (envoy/config/
// subscription.h): update_attempt, update_success, update_failure (the file could not be read
// or parsed), update_rejected (its resources were refused: proto validation, a field moe-host
// does not run, or the owner's rejection, e.g. Go's parser returning config id 0),
// init_fetch_timeout (always 0: files are read synchronously), update_time (ms since the epoch
// of the last success), version (a hash of version_info, as Envoy's xxHash64 gauge stands for
// version_text) and the update_duration histogram.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "bootstrap.h"
#include "file_watcher.h"
#include "stats.h"

namespace moe {

class FilesystemSubscription {
public:
  // Applies one compiled update; returns "" when accepted, otherwise why it was rejected
  // (resources that could be applied stay applied, as Envoy's SotW LDS/CDS do).
  using OnUpdate = std::function<std::string(const bootstrap::Resources& resources)>;

  // kind: "lds", "cds" or "rds". bootstrap_path: the -c file (YAML; "" when the host was given
  // compiled JSON: moectl then knows no secrets). Throws std::runtime_error when the file does
  // not exist or cannot be watched (Envoy refuses such a config at load).
  FilesystemSubscription(FileWatcher& watcher, const bootstrap::ConfigSource& source, std::string kind,
                         const std::string& stat_prefix, std::string bootstrap_path, OnUpdate on_update);
  ~FilesystemSubscription();

  // Reads the file now (Envoy's start(): "attempt to read in case there is a file there").
  void start();
  const std::string& path() const { return source_.path; }
  // version_info of the last accepted update ("" before one).
  const std::string& versionInfo() const { return version_info_; }

private:
  void refresh();

  FileWatcher& watcher_;
  uint64_t watch_id_ = 0;
  const bootstrap::ConfigSource source_;
  const std::string kind_;
  const std::string bootstrap_path_;
  OnUpdate on_update_;
  bool started_ = false;
  std::string version_info_;
  Counter& update_attempt_;
  Counter& update_success_;
  Counter& update_failure_;
  Counter& update_rejected_;
  Counter& init_fetch_timeout_;
  Gauge& update_time_;
  Gauge& version_;
  Histogram& update_duration_;
};
using FilesystemSubscriptionPtr = std::unique_ptr<FilesystemSubscription>;

// The bootstrap path moectl compiles resource files against, and the process-wide watcher on
// the main dispatcher. Set once by main before any subscription exists.
struct XdsContext {
  std::string bootstrap_path;     // "" for a compiled (.json) bootstrap
  FileWatcher* watcher = nullptr; // main thread only
};
XdsContext& xdsContext();

} // namespace moe
