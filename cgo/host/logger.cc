// Envoy-style log lines: "[2026-11-30 05:00:00.123][tid][level][logger] msg" on stderr or the
// --log-path file. One write(2) per line so lines from worker threads (and Go, which logs through
// envoyGoFilterLog) never interleave mid-line.
#include "logger.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <string>

namespace moe {

namespace {

// Envoy's ALL_LOGGER_ID (source/common/common/logger.h), in its order.
const char* const kLoggerNames[] = {
    "a2a", "admin", "alternate_protocols_cache", "aws", "assert", "backtrace", "basic_auth",
    "cache_filter", "client", "config", "connection", "conn_handler", "compression",
    "credential_injector", "decompression", "dns", "dubbo", "envoy_bug", "ext_authz", "ext_proc",
    "rocketmq", "file", "filter", "forward_proxy", "geolocation", "grpc", "happy_eyeballs", "hc",
    "health_checker", "http", "http2", "hystrix", "init", "io", "jwt", "json_rpc", "kafka",
    "key_value_store", "lua", "local_rate_limit", "main", "matcher", "mcp", "misc", "mongo",
    "multi_connection", "notification", "oauth2", "quic", "quic_stream", "pool",
    "rate_limit_quota", "rbac", "rds", "redis", "router", "runtime", "stats", "secret", "sse",
    "tap", "testing", "thrift", "tracing", "upstream", "udp", "wasm", "websocket", "golang",
    "stats_sinks", "dynamic_modules", "ip_tagging"};

// The fd log lines go to: stderr, or the --log-path file (set once at start).
std::atomic<int> g_log_fd{STDERR_FILENO};

} // namespace

std::vector<Logger*>& loggers() {
  // Leaked on purpose: Go threads may log while the process exits.
  static std::vector<Logger*>* all = [] {
    auto* v = new std::vector<Logger*>();
    for (const char* n : kLoggerNames) {
      auto* l = new Logger();
      l->name = n;
      v->push_back(l);
    }
    return v;
  }();
  return *all;
}

Logger* findLogger(std::string_view name) {
  for (Logger* l : loggers()) {
    if (name == l->name) return l;
  }
  return nullptr;
}

Logger& loggerFor(std::string_view component) {
  if (Logger* l = findLogger(component)) return *l;
  return *findLogger("misc");
}

void setAllLogLevels(uint32_t level) {
  for (Logger* l : loggers()) l->level.store(level, std::memory_order_relaxed);
}

uint32_t golangLogLevel() {
  static Logger& golang = loggerFor("golang");
  return golang.level.load(std::memory_order_relaxed);
}

bool parseLogLevel(std::string_view s, uint32_t* out) {
  static const struct { const char* name; uint32_t level; } kLevels[] = {
      {"trace", Trace}, {"debug", Debug},   {"info", Info},         {"warning", Warn},
      {"warn", Warn},   {"error", Error},   {"critical", Critical}, {"off", Off},
  };
  for (auto& l : kLevels) {
    if (s == l.name) { *out = l.level; return true; }
  }
  return false;
}

const char* logLevelName(uint32_t level) {
  // spdlog's level names as Envoy configures them (SPDLOG_LEVEL_NAMES: "warning", not "warn").
  static const char* kNames[] = {"trace", "debug", "info", "warning", "error", "critical", "off"};
  return level <= Off ? kNames[level] : "unknown";
}

bool setLogPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  g_log_fd.store(fd);
  return true;
}

void logMessage(uint32_t level, std::string_view component, std::string_view msg) {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char prefix[128];
  int n = snprintf(prefix, sizeof(prefix), "[%04d-%02d-%02d %02d:%02d:%02d.%03d][%ld][%s][",
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                   static_cast<int>(tv.tv_usec / 1000), static_cast<long>(syscall(SYS_gettid)),
                   logLevelName(level));
  std::string line;
  line.reserve(n + component.size() + msg.size() + 4);
  line.append(prefix, n > 0 ? static_cast<size_t>(n) : 0);
  line.append(component);
  line.append("] ");
  line.append(msg);
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  const int fd = g_log_fd.load(std::memory_order_relaxed);
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w <= 0) break;  // the log destination is gone: nothing useful to do
    p += w;
    left -= static_cast<size_t>(w);
  }
}

void logf(uint32_t level, const char* component, const char* fmt, ...) {
  char stack_buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(stack_buf, sizeof(stack_buf), fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof(stack_buf)) {
    logMessage(level, component, std::string_view(stack_buf, n));
    return;
  }
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  vsnprintf(big.data(), big.size(), fmt, ap);
  va_end(ap);
  big.resize(static_cast<size_t>(n));
  logMessage(level, component, big);
}

} // namespace moe
