// Logging with Envoy's levels (0 trace .. 6 off), set by -l and read by Go through
// envoyGoFilterLogLevel. Lines go to stderr as "[time][level][component] message".
#pragma once
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <string_view>

namespace moe {

enum LogLevel : uint32_t { Trace = 0, Debug = 1, Info = 2, Warn = 3, Error = 4, Critical = 5, Off = 6 };

// Process-wide because Envoy's log level is process-wide and Go polls it with no context.
extern std::atomic<uint32_t> g_log_level;

// Parses "trace|debug|info|warning|warn|error|critical|off"; returns false when unknown.
bool parseLogLevel(std::string_view s, uint32_t* out);
void logMessage(uint32_t level, std::string_view component, std::string_view msg);
void logf(uint32_t level, const char* component, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

#define MOE_LOG(level, component, ...)                                                          \
  do {                                                                                          \
    if (static_cast<uint32_t>(level) >= ::moe::g_log_level.load(std::memory_order_relaxed))     \
      ::moe::logf(level, component, __VA_ARGS__);                                               \
  } while (0)

} // namespace moe
