// moe-host entry point (Envoy: source/exe/main_common.cc, source/server/server.cc): Envoy's
// command line, the compiled bootstrap, workers, admin, graceful stop on SIGINT/SIGTERM, and
// SIGHUP/SIGUSR1 handled as Envoy does.
#include <event2/event.h>
#include <event2/thread.h>
#include <arpa/inet.h>
#include <http_parser.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>

#include "access_log.h"
#include "admin.h"
#include "bootstrap.h"
#include "cluster.h"
#include "config_dump.h"
#include "dispatcher_impl.h"
#include "dso.h"
#include "file_watcher.h"
#include "listener_manager.h"
#include "logger.h"
#include "moectl_runner.h"
#include "options.h"
#include "server.h"
#include "stats.h"
#include "upstream_guard.h"
#include "worker.h"
#include "xds.h"

// Defined only in -fsanitize=address builds (LeakSanitizer); weak so other builds link.
extern "C" void __lsan_do_leak_check(void) __attribute__((weak));

namespace {
// True in sanitizer builds (the LSan runtime is linked in) unless MOE_LSAN_AT_EXIT=0.
bool leakCheckEnabled() {
  const char* env = getenv("MOE_LSAN_AT_EXIT");
  return __lsan_do_leak_check != nullptr && !(env != nullptr && std::string(env) == "0");
}
} // namespace

namespace moe {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path + ": " + strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `moectl compile -c path` and returns its stdout. Its stderr goes straight to ours, so
// a rejected config explains itself.
std::string compileWithMoectl(const std::string& path) {
  MoectlResult res = runMoectl({"compile", "-c", path});
  if (res.exit_code != 0)
    throw std::runtime_error(findMoectl() + " compile -c " + path + " failed (exit status " +
                             std::to_string(res.exit_code) + ")");
  return res.out;
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class ServerImpl : public Server {
public:
  explicit ServerImpl(Options options)
      : options_(std::move(options)), main_(std::make_unique<DispatcherImpl>("main", 0)) {}

  const Options& options() const override { return options_; }
  ClusterManager& clusterManager() override { return *cluster_manager_; }
  Dispatcher& mainDispatcher() override { return *main_; }
  uint32_t concurrency() const override { return options_.concurrency; }
  Dispatcher& worker(uint32_t id) override { return workers_.at(id)->dispatcher(); }
  bool draining() const override { return draining_.load(); }

  // Builds everything the bootstrap describes (Envoy's InstanceImpl::initialize): clusters,
  // listener factories (golang libraries loaded and their configs parsed by Go), and, unless
  // only validating, the listen sockets and the admin listener. Throws on a rejected config.
  void init(const bootstrap::Bootstrap& config) {
    const bool validate = options_.mode == Options::Mode::Validate;
    // Workers exist (not running) before the factories, which may ask for their dispatchers.
    for (uint32_t i = 0; i < options_.concurrency; i++) workers_.push_back(std::make_unique<Worker>(i, *this));
    upstream_guard::init();  // before the clusters resolve anything
    accessLogManager().setFlushOptions(options_.file_flush_interval_ms, options_.file_flush_min_size_kb);
    for (auto& [name, value] : options_.stats_tags) stats().addFixedTag(name, value);
    // Validation resolves no names (Envoy's ValidationClusterManager has no DNS either).
    cluster_manager_ = std::make_unique<ClusterManagerImpl>(config.clusters, /*start_dns=*/!validate);
    startResources(config, validate);
    if (validate) return;

    if (config.admin.has_value()) {
      AdminServer::Hooks hooks;
      hooks.quit = [this] { beginShutdown(); };
      hooks.draining = [this] { return draining(); };
      hooks.options = &options_;
      hooks.cluster_manager = cluster_manager_.get();
      hooks.reopen_logs = [] { accessLogManager().reopen(); };
      hooks.config_dump = [this, static_dump = config.config_dump] {
        ConfigDumpSources src;
        src.static_dump = static_dump;
        src.listeners = listener_manager_.get();
        src.clusters = cluster_manager_.get();
        if (lds_) src.lds_version_info = lds_->versionInfo();
        if (cds_) src.cds_version_info = cds_->versionInfo();
        return buildConfigDump(src);
      };
      admin_ = std::make_unique<AdminServer>(*main_, std::move(hooks));
      uint16_t port = admin_->start(config.admin->address.address, config.admin->address.port);
      MOE_LOG(Info, "main", "admin address: %s:%u", config.admin->address.address.c_str(), static_cast<unsigned>(port));
      // server.cc: --admin-address-path gets the admin listener's address.
      if (!options_.admin_address_path.empty()) {
        std::ofstream out(options_.admin_address_path, std::ios::trunc);
        const std::string& ip = config.admin->address.address;
        out << (ip.find(':') != std::string::npos ? "[" + ip + "]" : ip) << ":" << port;
        if (!out) throw std::runtime_error("cannot write admin address to " + options_.admin_address_path);
      }
    }
  }

  // Runs until SIGINT/SIGTERM or /quitquitquit and the drain that follows.
  int serve() {
    // libevent signal events: sigaction-based like Envoy's, and they leave Go's handlers for
    // the synchronous signals (SIGSEGV...) alone.
    sigint_ = evsignal_new(main_->base(), SIGINT, &ServerImpl::onSignal, this);
    sigterm_ = evsignal_new(main_->base(), SIGTERM, &ServerImpl::onSignal, this);
    event_add(sigint_, nullptr);
    event_add(sigterm_, nullptr);
    // server.cc:1016-1023: SIGUSR1 reopens the access logs (log rotation), SIGHUP is eaten with
    // a warning (the default action of either would kill the process and reset in-flight
    // requests). SIGUSR2 is left at its default action, as in Envoy, which does not handle it.
    sigusr1_ = evsignal_new(main_->base(), SIGUSR1, &ServerImpl::onReopenSignal, this);
    sighup_ = evsignal_new(main_->base(), SIGHUP, &ServerImpl::onSighup, this);
    event_add(sigusr1_, nullptr);
    event_add(sighup_, nullptr);

    // Histogram intervals (the P-values' first number on /stats) are merged at every stats flush,
    // by default every 5 s (stats_flush_interval).
    stats_flush_timer_ = main_->createTimer([this] {
      stats().mergeHistograms();
      stats_flush_timer_->enableTimer(std::chrono::milliseconds(5000));
    });
    stats_flush_timer_->enableTimer(std::chrono::milliseconds(5000));

    workers_started_ = true;
    for (auto& w : workers_) w->start();
    MOE_LOG(Info, "main", "starting main dispatch loop");
    main_->run();

    for (auto& w : workers_) w->stop();
    for (auto& w : workers_) w->join();
    // AccessLogFileImpl's destructor: what is still buffered is written.
    accessLogManager().flushAll();
    MOE_LOG(Info, "main", "exiting");
    return 0;
  }

  // Sanitizer builds, before LeakSanitizer looks, when the server never served (validate,
  // init_only): Go's collection runs, but there are no worker loops to run posted deletes (and
  // no request ever made one).
  void releaseGoHeldMemoryNotServing() {
    if (workers_started_) return;
    for (golang::GoLibrary* lib : golang::loadedGoLibraries()) {
      if (lib->cleanUp != nullptr) lib->cleanUp();
    }
  }

private:
  // Static clusters exist; now CDS, the static listeners, then LDS, in Envoy's order
  // (cluster manager init before listeners; each file is read once now and again when a new
  // one is moved into place: xds.h, listener_manager.h). A listener or RDS table loaded by a
  // subscription may be rejected without stopping the server, as in Envoy. Validation binds no
  // listener and reads no LDS or CDS file (Envoy's ValidationClusterManagerFactory::createCds
  // throws its CDS subscription away; RDS files of static listeners are read).
  void startResources(const bootstrap::Bootstrap& config, bool validate) {
    file_watcher_ = std::make_unique<FileWatcher>(*main_);
    xdsContext().watcher = file_watcher_.get();
    xdsContext().bootstrap_path = endsWith(options_.config_path, ".json") ? "" : options_.config_path;
    const auto& dr = config.dynamic_resources;
    if (dr.cds && !validate) {
      cds_ = std::make_unique<FilesystemSubscription>(
          *file_watcher_, *dr.cds, "cds", "cluster_manager.cds.", xdsContext().bootstrap_path,
          [this](const bootstrap::Resources& r) { return cluster_manager_->onCdsUpdate(r.clusters, r.version_info); });
      cds_->start();
    }
    std::vector<Worker*> workers;
    for (auto& w : workers_) workers.push_back(w.get());
    listener_manager_ = std::make_unique<ListenerManager>(*this, std::move(workers), options_.drain_time_ms, validate);
    for (auto& listener : config.listeners) listener_manager_->addStaticListener(listener);
    if (dr.lds && !validate) {
      lds_ = std::make_unique<FilesystemSubscription>(
          *file_watcher_, *dr.lds, "lds", "listener_manager.lds.", xdsContext().bootstrap_path,
          [this](const bootstrap::Resources& r) { return listener_manager_->onLdsUpdate(r.listeners, r.version_info); });
      lds_->start();
    }
  }

  static void onReopenSignal(evutil_socket_t, short, void*) {
    MOE_LOG(Info, "main", "caught SIGUSR1. Reopening access logs.");
    accessLogManager().reopen();
  }

  static void onSignal(evutil_socket_t sig, short, void* arg) {
    auto* self = static_cast<ServerImpl*>(arg);
    MOE_LOG(Warn, "main", "caught %s", sig == SIGINT ? "SIGINT" : "SIGTERM");
    self->beginShutdown();
  }

  static void onSighup(evutil_socket_t, short, void*) {
    MOE_LOG(Warn, "main", "caught and eating SIGHUP. See documentation for how to hot restart.");
  }

  // Graceful stop: stop accepting, let connections finish their current request with
  // "connection: close", and stop once no stream is left or drain time is over.
  void beginShutdown() {
    if (draining_.exchange(true)) {
      finishShutdown();  // a second signal: stop now
      return;
    }
    MOE_LOG(Info, "main", "shutting down: draining for at most %llu ms",
            static_cast<unsigned long long>(options_.drain_time_ms));
    for (auto& w : workers_) {
      w->stopListening();
      w->drainConnections();
    }
    drain_deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.drain_time_ms);
    drain_timer_ = main_->createTimer([this] { checkDrained(); });
    drain_timer_->enableTimer(std::chrono::milliseconds(10));
  }

  void checkDrained() {
    const bool idle = activeDownstreamStreams() == 0 && stats().gauge("moe_host.downstream_cx_active").get() <= 0;
    if (idle || std::chrono::steady_clock::now() >= drain_deadline_) {
      if (!idle) MOE_LOG(Warn, "main", "drain time elapsed with %lld active streams",
                         static_cast<long long>(activeDownstreamStreams()));
      finishShutdown();
      return;
    }
    drain_timer_->enableTimer(std::chrono::milliseconds(20));
  }

  void finishShutdown() {
    if (drain_timer_) drain_timer_->disableTimer();
    if (leakCheckEnabled()) releaseGoHeldMemory();
    for (auto& w : workers_) w->stop();
    main_->exit();
  }

  // Sanitizer builds only. Request memory is freed by Go's GC finalizers (Finalize), so before
  // LeakSanitizer looks, force a collection the way Envoy's own ASan tests do
  // (envoyGoFilterCleanUp runs runtime.GC and waits for finalizers), then let each worker run
  // the deferred deletes those finalizers posted.
  void releaseGoHeldMemory() {
    for (golang::GoLibrary* lib : golang::loadedGoLibraries()) {
      if (lib->cleanUp != nullptr) lib->cleanUp();
    }
    for (auto& w : workers_) {
      std::promise<void> done;
      w->dispatcher().post([&done] { done.set_value(); });
      // Two rounds: a posted Finalize may itself defer a delete to the next loop iteration.
      done.get_future().wait();
      std::promise<void> again;
      w->dispatcher().post([&again] { again.set_value(); });
      again.get_future().wait();
    }
  }

  Options options_;
  std::unique_ptr<DispatcherImpl> main_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<ClusterManagerImpl> cluster_manager_;
  std::unique_ptr<FileWatcher> file_watcher_;
  std::unique_ptr<FilesystemSubscription> cds_, lds_;
  std::unique_ptr<ListenerManager> listener_manager_;
  std::unique_ptr<AdminServer> admin_;
  std::atomic<bool> draining_{false};
  bool workers_started_ = false;
  event* sigint_ = nullptr;
  event* sigterm_ = nullptr;
  event* sigusr1_ = nullptr;
  event* sighup_ = nullptr;
  TimerPtr drain_timer_;
  TimerPtr stats_flush_timer_;
  std::chrono::steady_clock::time_point drain_deadline_;
};

} // namespace
} // namespace moe

int main(int argc, char** argv) {
  using namespace moe;
  Options options = parseOptions(argc, argv);
  // Before anything else: the Go library reads the level when it is loaded.
  setAllLogLevels(options.log_level);
  for (auto& [name, level] : options.component_log_levels) findLogger(name)->level.store(level);
  if (!options.log_path.empty() && !setLogPath(options.log_path)) {
    fprintf(stderr, "moe-host: cannot open --log-path %s: %s\n", options.log_path.c_str(), strerror(errno));
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  evthread_use_pthreads();

  bootstrap::Bootstrap config;
  try {
    if (options.config_path.empty()) {
      // configuration_impl / server.cc: Envoy needs one of its config sources.
      throw std::runtime_error("At least one of --config-path or --config-yaml or Options::configProto() should be non-empty");
    }
    std::string text = endsWith(options.config_path, ".json") ? readFile(options.config_path)
                                                               : compileWithMoectl(options.config_path);
    config = bootstrap::parseJson(text);
  } catch (const std::exception& e) {
    MOE_LOG(Critical, "main", "error initializing configuration '%s': %s", options.config_path.c_str(), e.what());
    fflush(stderr);
    _exit(1);
  }

  // Leaked on purpose, like everything the Go runtime may still reach while the process ends.
  auto* server = new ServerImpl(options);
  int rc = 0;
  try {
    server->init(config);
  } catch (const std::exception& e) {
    if (options.mode == Options::Mode::Validate) {
      // config_validation/server.cc validateConfig: the error, and exit 1.
      MOE_LOG(Critical, "main", "error initializing configuration '%s': %s", options.config_path.c_str(), e.what());
    } else {
      MOE_LOG(Critical, "main", "error initializing server: %s", e.what());
    }
    fflush(stderr);
    _exit(1);
  }
  if (options.mode == Options::Mode::Validate) {
    // config_validation/server.cc validateConfig prints this on stdout.
    printf("configuration '%s' OK\n", options.config_path.c_str());
    if (leakCheckEnabled()) server->releaseGoHeldMemoryNotServing();
  } else if (options.mode == Options::Mode::InitOnly) {
    if (leakCheckEnabled()) server->releaseGoHeldMemoryNotServing();
  } else {
    rc = server->serve();
  }
  fflush(stdout);
  fflush(stderr);
  // _exit skips the leak check LeakSanitizer runs from atexit, so run it here (sanitizer builds;
  // MOE_LSAN_AT_EXIT=0 turns it off). It exits non-zero when it finds a leak.
  if (leakCheckEnabled()) __lsan_do_leak_check();
  // _exit: Go threads live in this process; running C++ static destructors under them is unsafe.
  _exit(rc);
}
