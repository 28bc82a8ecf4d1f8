#include "retry_state.h"

#include <random>
#include <string>

namespace moe {
namespace {

// RetryPolicy::RETRY_ON_* bits.
enum : uint32_t {
  k5xx = 1 << 0,
  kGatewayError = 1 << 1,
  kConnectFailure = 1 << 2,
  kRetriable4xx = 1 << 3,
  kRefusedStream = 1 << 4,
  kGrpcCancelled = 1 << 5,
  kGrpcDeadlineExceeded = 1 << 6,
  kGrpcResourceExhausted = 1 << 7,
  kEnvoyRateLimited = 1 << 8,
  kRetriableStatusCodes = 1 << 9,
  kGrpcUnavailable = 1 << 10,
  kGrpcInternal = 1 << 11,
  kReset = 1 << 12,
  kResetBeforeRequest = 1 << 13,
};

uint32_t retryOnBit(std::string_view t) {
  if (t == "5xx") return k5xx;
  if (t == "gateway-error") return kGatewayError;
  if (t == "connect-failure") return kConnectFailure;
  if (t == "envoy-ratelimited") return kEnvoyRateLimited;
  if (t == "retriable-4xx") return kRetriable4xx;
  if (t == "refused-stream") return kRefusedStream;
  if (t == "retriable-status-codes") return kRetriableStatusCodes;
  if (t == "reset") return kReset;
  if (t == "reset-before-request") return kResetBeforeRequest;
  if (t == "cancelled") return kGrpcCancelled;
  if (t == "deadline-exceeded") return kGrpcDeadlineExceeded;
  if (t == "resource-exhausted") return kGrpcResourceExhausted;
  if (t == "unavailable") return kGrpcUnavailable;
  if (t == "internal") return kGrpcInternal;
  return 0;  // unknown tokens are ignored
}

// StringUtil::splitToken(value, ",", false, true): trimmed, empty tokens dropped.
std::vector<std::string> splitTokens(std::string_view v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    std::string_view t = v.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    if (!t.empty()) out.emplace_back(t);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool parseUint(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

uint64_t randomU64() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

} // namespace

std::unique_ptr<RetryState> RetryState::create(const std::optional<bootstrap::RetryPolicy>& policy,
                                                HeaderMap& request_headers, ClusterStats& cluster,
                                                Dispatcher& dispatcher) {
  std::unique_ptr<RetryState> ret;
  bool policy_retries = false;
  if (policy) {
    for (auto& t : policy->retry_on) policy_retries |= retryOnBit(t) != 0;
  }
  if (request_headers.get("x-envoy-retry-on") || request_headers.get("x-envoy-retry-grpc-on") || policy_retries) {
    ret.reset(new RetryState(policy, request_headers, cluster, dispatcher));
  }
  // Consumed whether or not the request may be retried: never sent upstream.
  for (const char* h : {"x-envoy-retry-on", "x-envoy-retry-grpc-on", "x-envoy-max-retries",
                        "x-envoy-hedge-on-per-try-timeout", "x-envoy-retriable-header-names",
                        "x-envoy-retriable-status-codes", "x-envoy-upstream-rq-per-try-timeout-ms"}) {
    request_headers.remove(h);
  }
  return ret;
}

RetryState::RetryState(const std::optional<bootstrap::RetryPolicy>& policy, HeaderMap& request_headers,
                       ClusterStats& cluster, Dispatcher& dispatcher)
    : cluster_(cluster), dispatcher_(dispatcher) {
  // The route's policy (RetryPolicyImpl; without one, Envoy's default policy: 1 retry, no
  // retry_on), then the request headers merged in.
  if (policy) {
    for (auto& t : policy->retry_on) retry_on_ |= retryOnBit(t);
    retries_remaining_ = policy->num_retries;
    retriable_status_codes_ = policy->retriable_status_codes;
  }
  base_interval_ms_ = policy && policy->base_interval_ms ? *policy->base_interval_ms : 25;  // upstream.base_retry_backoff_ms
  max_interval_ms_ = policy && policy->max_interval_ms ? *policy->max_interval_ms : base_interval_ms_ * 10;
  next_interval_ms_ = base_interval_ms_;
  if (const std::string* v = request_headers.get("x-envoy-retry-on")) {
    for (auto& t : splitTokens(*v)) retry_on_ |= retryOnBit(t);
  }
  if (const std::string* v = request_headers.get("x-envoy-retry-grpc-on")) {
    for (auto& t : splitTokens(*v)) {
      uint32_t b = retryOnBit(t);
      if (b & (kGrpcCancelled | kGrpcDeadlineExceeded | kGrpcResourceExhausted | kGrpcUnavailable | kGrpcInternal))
        retry_on_ |= b;
    }
  }
  if (retry_on_ != 0) {
    if (const std::string* v = request_headers.get("x-envoy-max-retries")) {
      uint64_t n;
      if (parseUint(*v, &n)) retries_remaining_ = static_cast<uint32_t>(n);
    }
  }
  if (const std::string* v = request_headers.get("x-envoy-retriable-status-codes")) {
    for (auto& t : splitTokens(*v)) {
      uint64_t n;
      if (parseUint(t, &n)) retriable_status_codes_.push_back(static_cast<uint32_t>(n));
    }
  }
}

RetryState::~RetryState() {
  *alive_ = false;
  resetRetry();
}

void RetryState::resetRetry() {
  if (holds_retry_) {
    cluster_.retries_open.fetch_sub(1);
    holds_retry_ = false;
  }
  callback_ = nullptr;
  if (retry_timer_) retry_timer_->disableTimer();
  do_retry_type_ = DoRetryType::Immediately;
}

// JitteredExponentialBackOffStrategy::nextBackOffMs.
uint64_t RetryState::nextBackOffMs() {
  const uint64_t backoff = next_interval_ms_;
  next_interval_ms_ = next_interval_ms_ < max_interval_ms_ / 2 ? next_interval_ms_ * 2 : max_interval_ms_;
  return backoff == 0 ? 0 : randomU64() % backoff;
}

RetryState::Status RetryState::shouldRetry(Decision d, std::function<void()> cb) {
  resetRetry();
  if (d == Decision::NoRetry) return Status::No;
  if (retries_remaining_ == 0) return Status::NoRetryLimitExceeded;
  retries_remaining_--;
  // The cluster's retry circuit breaker (circuit_breakers max_retries, default 3).
  if (cluster_.retries_open.load() >= ClusterStats::kMaxRetries) return Status::NoOverflow;
  cluster_.retries_open.fetch_add(1);
  holds_retry_ = true;
  callback_ = std::move(cb);
  std::weak_ptr<bool> alive = alive_;
  auto run = [this, alive] {
    auto a = alive.lock();
    if (!a || !*a || !callback_) return;
    std::function<void()> c = callback_;
    c();
  };
  if (d == Decision::RetryWithBackoff) {
    if (!retry_timer_) retry_timer_ = dispatcher_.createTimer(run);
    retry_timer_->enableTimer(std::chrono::milliseconds(nextBackOffMs()));
    do_retry_type_ = DoRetryType::Exponential;
  } else {
    dispatcher_.post(run);  // scheduleCallbackNextIteration
  }
  return Status::Yes;
}

// Grpc::Common::getGrpcStatus on the response headers (trailers-only responses).
static std::optional<uint64_t> grpcStatus(const HeaderMap& h) {
  const std::string* v = h.get("grpc-status");
  uint64_t n;
  if (v == nullptr || !parseUint(*v, &n)) return std::nullopt;
  return n;
}

bool RetryState::wouldRetryFromHeaders(const HeaderMap& response) const {
  // A response from an upstream Envoy's rate limiter is retried only for envoy-ratelimited.
  if (response.get("x-envoy-ratelimited") != nullptr) return (retry_on_ & kEnvoyRateLimited) != 0;
  const int status = response.status();
  if ((retry_on_ & k5xx) && status >= 500 && status < 600) return true;
  // Http::CodeUtility::isGatewayError: 502, 503, 504.
  if ((retry_on_ & kGatewayError) && status >= 502 && status <= 504) return true;
  if ((retry_on_ & kRetriable4xx) && status == 409) return true;
  if (retry_on_ & kRetriableStatusCodes) {
    for (uint32_t code : retriable_status_codes_) {
      // 425 Too Early is retried only for requests that were not early data (HTTP/1 never is).
      if (static_cast<int>(code) == status) return true;
    }
  }
  if (retry_on_ & (kGrpcCancelled | kGrpcDeadlineExceeded | kGrpcResourceExhausted | kGrpcUnavailable | kGrpcInternal)) {
    if (auto g = grpcStatus(response)) {
      if ((*g == 1 && (retry_on_ & kGrpcCancelled)) || (*g == 4 && (retry_on_ & kGrpcDeadlineExceeded)) ||
          (*g == 8 && (retry_on_ & kGrpcResourceExhausted)) || (*g == 14 && (retry_on_ & kGrpcUnavailable)) ||
          (*g == 13 && (retry_on_ & kGrpcInternal)))
        return true;
    }
  }
  return false;
}

RetryState::Status RetryState::shouldRetryHeaders(const HeaderMap& response, std::function<void()> cb) {
  Decision d = Decision::NoRetry;
  if (wouldRetryFromHeaders(response)) {
    d = Decision::RetryWithBackoff;
    // A 425 that would be retried goes again right away (wouldRetryFromHeaders,
    // disable_early_data).
    if (response.status() == 425) d = Decision::RetryImmediately;
  }
  return shouldRetry(d, std::move(cb));
}

// wouldRetryFromReset.
RetryState::Decision RetryState::wouldRetryFromReset(Reset reason, bool upstream_request_started) const {
  if (reason == Reset::ConnectionFailure || reason == Reset::ConnectionTimeout) {
    if (retry_on_ & kConnectFailure) return Decision::RetryWithBackoff;
  }
  if ((retry_on_ & kResetBeforeRequest) && !upstream_request_started) return Decision::RetryWithBackoff;
  if (retry_on_ & kReset) return Decision::RetryWithBackoff;
  // An upstream reset counts as a 5xx (it results in one).
  if (retry_on_ & (k5xx | kGatewayError)) return Decision::RetryWithBackoff;
  // refused-stream: an HTTP/2 stream reset, never seen on HTTP/1.
  return Decision::NoRetry;
}

RetryState::Status RetryState::shouldRetryReset(Reset reason, bool upstream_request_started, std::function<void()> cb) {
  return shouldRetry(wouldRetryFromReset(reason, upstream_request_started), std::move(cb));
}

} // namespace moe
