// moe-host entry point (Envoy: source/exe/main_common.cc, source/server/server.cc): Envoy's
// command line, the compiled bootstrap, workers, admin, graceful stop on SIGINT/SIGTERM, and
// SIGHUP/SIGUSR1 handled as Envoy does.
#include <event2/event.h>
#include <event2/thread.h>
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

#include "admin.h"
#include "bootstrap.h"
#include "cluster.h"
#include "dispatcher_impl.h"
#include "dso.h"
#include "file_watcher.h"
#include "listener_manager.h"
#include "logger.h"
#include "moectl_runner.h"
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

[[noreturn]] void usageError(const std::string& msg) {
  fprintf(stderr, "moe-host: %s\n", msg.c_str());
  fprintf(stderr,
          "usage: moe-host -c FILE [--concurrency N] [-l LEVEL] [--drain-time-s N] "
          "[--base-id N] [--disable-hot-restart]\n");
  exit(1);
}

bool parseUint(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || s[0] == '-') return false;
  *out = v;
  return true;
}

Options parseArgs(int argc, char** argv) {
  Options o;
  bool have_config = false;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline_value = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline_value = true;
      }
    }
    auto next = [&]() -> std::string {
      if (has_inline_value) return value;
      if (i + 1 >= argc) usageError("missing value for " + arg);
      return argv[++i];
    };
    if (arg == "-c" || arg == "--config-path") {
      o.config_path = next();
      have_config = true;
    } else if (arg == "--concurrency") {
      uint64_t n;
      if (!parseUint(next(), &n) || n == 0 || n > 1024) usageError("invalid --concurrency");
      o.concurrency = static_cast<uint32_t>(n);
    } else if (arg == "-l" || arg == "--log-level") {
      std::string level = next();
      if (!parseLogLevel(level, &o.log_level)) usageError("invalid log level \"" + level + "\"");
    } else if (arg == "--drain-time-s") {
      uint64_t n;
      if (!parseUint(next(), &n)) usageError("invalid --drain-time-s");
      o.drain_time_ms = n * 1000;
    } else if (arg == "--base-id") {
      next();  // hot restart is not supported; accepted for command-line compatibility
    } else if (arg == "--disable-hot-restart") {
      if (has_inline_value) usageError("--disable-hot-restart takes no value");
    } else {
      usageError("unknown flag " + arg);
    }
  }
  if (!have_config) usageError("-c/--config-path is required");
  return o;
}

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

  int run(const bootstrap::Bootstrap& config) {
    // Workers exist (not running) before the factories, which may ask for their dispatchers.
    for (uint32_t i = 0; i < options_.concurrency; i++) workers_.push_back(std::make_unique<Worker>(i, *this));
    upstream_guard::init();  // before the clusters resolve anything
    cluster_manager_ = std::make_unique<ClusterManagerImpl>(config.clusters);
    startResources(config);

    if (config.admin.has_value()) {
      AdminServer::Hooks hooks;
      hooks.quit = [this] { beginShutdown(); };
      hooks.draining = [this] { return draining(); };
      hooks.concurrency = options_.concurrency;
      admin_ = std::make_unique<AdminServer>(*main_, std::move(hooks));
      uint16_t port = admin_->start(config.admin->address.address, config.admin->address.port);
      MOE_LOG(Info, "main", "admin address: %s:%u", config.admin->address.address.c_str(), static_cast<unsigned>(port));
    }

    // libevent signal events: sigaction-based like Envoy's, and they leave Go's handlers for
    // the synchronous signals (SIGSEGV...) alone.
    sigint_ = evsignal_new(main_->base(), SIGINT, &ServerImpl::onSignal, this);
    sigterm_ = evsignal_new(main_->base(), SIGTERM, &ServerImpl::onSignal, this);
    event_add(sigint_, nullptr);
    event_add(sigterm_, nullptr);
    // server.cc:1016-1023: SIGUSR1 reopens the access logs, SIGHUP is eaten with a warning
    // (the default action of either would kill the process and reset in-flight requests).
    // SIGUSR2 is left at its default action, as in Envoy, which does not handle it.
    sigusr1_ = evsignal_new(main_->base(), SIGUSR1, &ServerImpl::onSigusr1, this);
    sighup_ = evsignal_new(main_->base(), SIGHUP, &ServerImpl::onSighup, this);
    event_add(sigusr1_, nullptr);
    event_add(sighup_, nullptr);

    for (auto& w : workers_) w->start();
    MOE_LOG(Info, "main", "starting main dispatch loop");
    main_->run();

    for (auto& w : workers_) w->stop();
    for (auto& w : workers_) w->join();
    MOE_LOG(Info, "main", "exiting");
    return 0;
  }

private:
  // Static clusters exist; now CDS, the static listeners, then LDS, in Envoy's order
  // (cluster manager init before listeners; each file is read once now and again when a new
  // one is moved into place: xds.h, listener_manager.h). A listener or RDS table loaded by a
  // subscription may be rejected without stopping the server, as in Envoy.
  void startResources(const bootstrap::Bootstrap& config) {
    file_watcher_ = std::make_unique<FileWatcher>(*main_);
    xdsContext().watcher = file_watcher_.get();
    xdsContext().bootstrap_path = endsWith(options_.config_path, ".json") ? "" : options_.config_path;
    const auto& dr = config.dynamic_resources;
    if (dr.cds) {
      cds_ = std::make_unique<FilesystemSubscription>(
          *file_watcher_, *dr.cds, "cds", "cluster_manager.cds.", xdsContext().bootstrap_path,
          [this](const bootstrap::Resources& r) { return cluster_manager_->onCdsUpdate(r.clusters); });
      cds_->start();
    }
    std::vector<Worker*> workers;
    for (auto& w : workers_) workers.push_back(w.get());
    listener_manager_ = std::make_unique<ListenerManager>(*this, std::move(workers), options_.drain_time_ms);
    for (auto& listener : config.listeners) listener_manager_->addStaticListener(listener);
    if (dr.lds) {
      lds_ = std::make_unique<FilesystemSubscription>(
          *file_watcher_, *dr.lds, "lds", "listener_manager.lds.", xdsContext().bootstrap_path,
          [this](const bootstrap::Resources& r) { return listener_manager_->onLdsUpdate(r.listeners); });
      lds_->start();
    }
  }

  static void onSignal(evutil_socket_t sig, short, void* arg) {
    auto* self = static_cast<ServerImpl*>(arg);
    MOE_LOG(Warn, "main", "caught %s", sig == SIGINT ? "SIGINT" : "SIGTERM");
    self->beginShutdown();
  }

  static void onSigusr1(evutil_socket_t, short, void*) {
    // moe-host writes no access log files of its own (access logs are the golang filters'
    // OnLog*, whose sinks are the plugins'), so there is nothing to reopen.
    MOE_LOG(Info, "main", "caught SIGUSR1. Reopening access logs.");
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
  event* sigint_ = nullptr;
  event* sigterm_ = nullptr;
  event* sigusr1_ = nullptr;
  event* sighup_ = nullptr;
  TimerPtr drain_timer_;
  std::chrono::steady_clock::time_point drain_deadline_;
};

} // namespace
} // namespace moe

int main(int argc, char** argv) {
  using namespace moe;
  Options options = parseArgs(argc, argv);
  // Before anything else: the Go library reads the level when it is loaded.
  g_log_level.store(options.log_level);
  signal(SIGPIPE, SIG_IGN);
  evthread_use_pthreads();

  bootstrap::Bootstrap config;
  try {
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
  int rc;
  try {
    rc = server->run(config);
  } catch (const std::exception& e) {
    MOE_LOG(Critical, "main", "error initializing server: %s", e.what());
    fflush(stderr);
    _exit(1);
  }
  fflush(stdout);
  fflush(stderr);
  // _exit skips the leak check LeakSanitizer runs from atexit, so run it here (sanitizer builds;
  // MOE_LSAN_AT_EXIT=0 turns it off). It exits non-zero when it finds a leak.
  if (leakCheckEnabled()) __lsan_do_leak_check();
  // _exit: Go threads live in this process; running C++ static destructors under them is unsafe.
  _exit(rc);
}
