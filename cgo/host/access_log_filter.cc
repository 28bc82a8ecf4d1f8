#include "access_log_filter.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>

namespace moe {

namespace {

uint64_t defaultRandom() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  return gen();
}

std::atomic<AccessLogFilterImpl::RandomFn> random_fn{&defaultRandom};

// envoy.data.accesslog.v3.AccessLogType by name (what moectl writes).
uint32_t logTypeNumber(const std::string& name) {
  static const char* const kNames[] = {"NotSet", "TcpUpstreamConnected", "TcpPeriodic", "TcpConnectionEnd",
                                       "DownstreamStart", "DownstreamPeriodic", "DownstreamEnd",
                                       "UpstreamPoolReady", "UpstreamPeriodic", "UpstreamEnd",
                                       "DownstreamTunnelSuccessfullyEstablished", "UdpTunnelUpstreamConnected",
                                       "UdpPeriodic", "UdpSessionEnd"};
  for (uint32_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); i++) {
    if (name == kNames[i]) return i;
  }
  throw std::runtime_error("access log filter: unknown log type \"" + name + "\"");
}

// Grpc::Common::getGrpcStatus(trailers, headers, info) (source/common/grpc/common.cc): the
// trailers' grpc-status, else the headers', else the HTTP status mapped by
// Grpc::Utility::httpToGrpcStatus (source/common/grpc/status.cc). A value that is not a number
// or above 16 (MaximumKnown) is InvalidCode (-1), which no filter status equals.
std::optional<int64_t> grpcStatus(const FormatContext& ctx, const StreamInfo& info) {
  auto fromMap = [](const HeaderMap* m) -> std::optional<int64_t> {
    if (m == nullptr) return std::nullopt;
    const std::string* v = m->get("grpc-status");
    if (v == nullptr || v->empty()) return std::nullopt;
    uint64_t n = 0;
    for (char c : *v) {
      if (c < '0' || c > '9' || n > 16) return -1;
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    return n > 16 ? -1 : static_cast<int64_t>(n);
  };
  if (auto s = fromMap(ctx.response_trailers)) return s;
  if (auto s = fromMap(ctx.response_headers)) return s;
  if (!info.response_code) return std::nullopt;
  switch (*info.response_code) {
  case 400: return 13;  // Internal
  case 401: return 16;  // Unauthenticated
  case 403: return 7;   // PermissionDenied
  case 404: return 12;  // Unimplemented
  case 429:
  case 502:
  case 503:
  case 504: return 14;  // Unavailable
  default: return 2;    // Unknown
  }
}

// UUIDRequestIDExtension::getInteger (source/extensions/request_id/uuid/config.cc): the first 8
// characters of x-request-id as hex, through StringUtil::atoull (strtoull, all of it consumed).
std::optional<uint64_t> requestIdInteger(const FormatContext& ctx) {
  if (ctx.request_headers == nullptr) return std::nullopt;
  const std::string* id = ctx.request_headers->get("x-request-id");
  if (id == nullptr || id->size() < 8) return std::nullopt;
  std::string head = id->substr(0, 8);
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(head.c_str(), &end, 16);
  if (*end != '\0' || (v == ULLONG_MAX && errno == ERANGE)) return std::nullopt;
  return v;
}

} // namespace

void AccessLogFilterImpl::setRandomForTest(RandomFn fn) { random_fn.store(fn ? fn : &defaultRandom); }

AccessLogFilterImpl::AccessLogFilterImpl(const bootstrap::AccessLogFilter& config) : config_(config) {
  using T = bootstrap::AccessLogFilter::Type;
  for (const auto& c : config_.filters) children_.emplace_back(c);
  if (config_.type == T::Header && config_.header) header_.emplace(*config_.header);
  for (const auto& t : config_.types) log_types_.push_back(logTypeNumber(t));
}

// ComparisonFilter::compareAgainstValue with the runtime key's default value.
bool AccessLogFilterImpl::compare(uint64_t lhs) const {
  const uint64_t value = config_.value;
  switch (config_.op) {
  case bootstrap::AccessLogFilter::Op::GE: return lhs >= value;
  case bootstrap::AccessLogFilter::Op::EQ: return lhs == value;
  case bootstrap::AccessLogFilter::Op::LE: return lhs <= value;
  case bootstrap::AccessLogFilter::Op::NE: return lhs != value;
  }
  return false;
}

bool AccessLogFilterImpl::evaluate(const FormatContext& ctx, const StreamInfo& info) const {
  using T = bootstrap::AccessLogFilter::Type;
  switch (config_.type) {
  case T::StatusCode:
    // No response code compares as 0.
    return compare(info.response_code ? *info.response_code : 0);
  case T::Duration: {
    // StreamInfo::currentDuration: up to now while the stream is open.
    auto end = info.completed ? *info.completed : std::chrono::steady_clock::now();
    return compare(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(end - info.start_steady).count()));
  }
  case T::NotHealthCheck: return true;
  case T::Traceable: return false;
  case T::Runtime: {
    // RuntimeFilter::evaluate: the request id's integer modulo the denominator unless
    // use_independent_randomness; then featureEnabled(key, numerator, random, denominator) =
    // random % denominator < min(numerator, denominator).
    const uint64_t den = config_.denominator;
    uint64_t random_value;
    std::optional<uint64_t> rid;
    if (!config_.independent_randomness) rid = requestIdInteger(ctx);
    random_value = rid ? *rid % den : random_fn.load()();
    return random_value % den < std::min<uint64_t>(config_.numerator, den);
  }
  case T::And:
    for (const auto& c : children_) {
      if (!c.evaluate(ctx, info)) return false;
    }
    return true;
  case T::Or:
    for (const auto& c : children_) {
      if (c.evaluate(ctx, info)) return true;
    }
    return false;
  case T::Header: {
    // HeaderFilter: the request headers, or an empty map when there are none.
    static const HeaderMap kEmpty;
    return header_ && header_->matches(ctx.request_headers ? *ctx.request_headers : kEmpty);
  }
  case T::ResponseFlag:
    // ResponseFlagFilter: any configured flag set; no flags configured means any flag at all.
    if (config_.flags.empty()) return !info.response_flag_list.empty();
    for (const auto& f : info.response_flag_list) {
      if (std::find(config_.flags.begin(), config_.flags.end(), f) != config_.flags.end()) return true;
    }
    return false;
  case T::GrpcStatus: {
    // GrpcStatusFilter: no status at all is Unknown (2).
    const int64_t status = grpcStatus(ctx, info).value_or(2);
    const bool found = std::find(config_.statuses.begin(), config_.statuses.end(), status) != config_.statuses.end();
    return config_.exclude ? !found : found;
  }
  case T::LogType: {
    const auto type = static_cast<uint32_t>(ctx.access_log_type);
    const bool found = std::find(log_types_.begin(), log_types_.end(), type) != log_types_.end();
    return config_.exclude ? !found : found;
  }
  }
  return false;
}

} // namespace moe
