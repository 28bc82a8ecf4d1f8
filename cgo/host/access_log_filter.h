#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "bootstrap.h"
#include "formatter.h"
#include "header_matcher.h"
#include "stream_info.h"

namespace moe {

// An access log filter tree (AccessLog::Filter, FilterFactory::fromProto in
// source/common/access_log/access_log_impl.cc). moe-host has no runtime, health checker or
// tracer: runtime keys take their defaults (as in Envoy when the key is unset),
// not_health_check is always true and traceable always false (no request is traced).
class AccessLogFilterImpl {
public:
  // Throws std::runtime_error for an invalid header matcher regex.
  explicit AccessLogFilterImpl(const bootstrap::AccessLogFilter& config);
  bool evaluate(const FormatContext& ctx, const StreamInfo& info) const;

  // The random source of runtime filters; tests replace it. Called on worker threads.
  using RandomFn = uint64_t (*)();
  static void setRandomForTest(RandomFn fn);

private:
  bool compare(uint64_t lhs) const;

  bootstrap::AccessLogFilter config_;
  std::vector<AccessLogFilterImpl> children_;  // And, Or
  std::optional<HeaderMatcherImpl> header_;    // Header
  std::vector<uint32_t> log_types_;            // LogType, as AccessLogType numbers
};

} // namespace moe
