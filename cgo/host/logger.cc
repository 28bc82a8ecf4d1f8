// Envoy-style log lines on stderr: "[2026-11-30 05:00:00.123][tid][level][component] msg".
// One write(2) per line so lines from worker threads (and Go, which writes through the same
// fd via envoyGoFilterLog) never interleave mid-line.
#include "logger.h"

#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <string>

namespace moe {

// Process-wide: set by main from -l before anything is built; Go reads it at dlopen time.
std::atomic<uint32_t> g_log_level{Info};

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

static const char* levelName(uint32_t level) {
  // Envoy prints "warning" for warn level.
  static const char* kNames[] = {"trace", "debug", "info", "warning", "error", "critical", "off"};
  return level <= Off ? kNames[level] : "unknown";
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
                   levelName(level));
  std::string line;
  line.reserve(n + component.size() + msg.size() + 4);
  line.append(prefix, n > 0 ? static_cast<size_t>(n) : 0);
  line.append(component);
  line.append("] ");
  line.append(msg);
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t w = ::write(STDERR_FILENO, p, left);
    if (w <= 0) break;  // stderr gone: nothing useful to do
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
