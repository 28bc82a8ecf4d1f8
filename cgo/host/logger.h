// Logging with Envoy's levels (0 trace .. 6 off) and Envoy's named loggers
// (source/common/common/logger.h ALL_LOGGER_ID: admin, conn_handler, golang, http, main, ...),
// each with its own level: -l sets all of them, --component-log-level and the admin /logging
// endpoint set one. Go reads the level of the "golang" logger through envoyGoFilterLogLevel
// (contrib/golang/common/log/cgo.cc: FilterLogger is Loggable<Id::golang>). Lines go to stderr
// (or --log-path) as "[time][tid][level][logger] message".
#pragma once
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moe {

enum LogLevel : uint32_t { Trace = 0, Debug = 1, Info = 2, Warn = 3, Error = 4, Critical = 5, Off = 6 };

struct Logger {
  const char* name;
  std::atomic<uint32_t> level{Info};
};

// Every Envoy logger, in Envoy's order (the order /logging lists them).
std::vector<Logger*>& loggers();
// The logger named name, or nullptr.
Logger* findLogger(std::string_view name);
// The logger for a moe-host component name; names that are no Envoy logger go to "misc".
Logger& loggerFor(std::string_view component);
void setAllLogLevels(uint32_t level);
// The level of the "golang" logger (what Go polls).
uint32_t golangLogLevel();

// Parses "trace|debug|info|warning|warn|error|critical|off"; returns false when unknown.
bool parseLogLevel(std::string_view s, uint32_t* out);
// Envoy's (spdlog's) level name: "trace", ..., "warning", ..., "off".
const char* logLevelName(uint32_t level);
// Writes log lines to this file from now on (--log-path); false with errno when it cannot open.
bool setLogPath(const std::string& path);
void logMessage(uint32_t level, std::string_view component, std::string_view msg);
void logf(uint32_t level, const char* component, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

// The logger is looked up once per call site.
#define MOE_LOG(LEVEL, component, ...)                                                          \
  do {                                                                                          \
    static ::moe::Logger& moe_log_logger_ = ::moe::loggerFor(component);                        \
    if (static_cast<uint32_t>(LEVEL) >= moe_log_logger_.level.load(std::memory_order_relaxed))  \
      ::moe::logf(LEVEL, component, __VA_ARGS__);                                               \
  } while (0)

} // namespace moe
