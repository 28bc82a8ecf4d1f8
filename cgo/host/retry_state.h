// RetryStateImpl (source/common/router/retry_state_impl.cc): whether a response or a reset is
// retried, the retry budget (num_retries, x-envoy-max-retries), the cluster's retry circuit
// breaker, and the fully jittered exponential back-off (JitteredExponentialBackOffStrategy,
// source/common/common/backoff_strategy.cc; base 25 ms, max 10x base by default).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "bootstrap.h"
#include "dispatcher.h"
#include "header_map.h"
#include "upstream.h"

namespace moe {

class RetryState {
public:
  enum class Status { No, NoOverflow, NoRetryLimitExceeded, Yes };
  enum class DoRetryType { Immediately, Exponential };
  // The resets the router tells apart (Http::StreamResetReason, reduced).
  enum class Reset { ConnectionFailure, ConnectionTimeout, ConnectionTermination, ProtocolError, LocalReset };

  // RetryStateImpl::create: a state when the policy or the x-envoy-retry-on / -grpc-on headers
  // ask for retries, else nullptr. The retry request headers are consumed either way.
  static std::unique_ptr<RetryState> create(const std::optional<bootstrap::RetryPolicy>& policy,
                                            HeaderMap& request_headers, ClusterStats& cluster,
                                            Dispatcher& dispatcher);
  ~RetryState();

  bool enabled() const { return retry_on_ != 0; }
  // The callback runs later (after a back-off, or on the next loop iteration) when Yes.
  Status shouldRetryHeaders(const HeaderMap& response_headers, std::function<void()> cb);
  Status shouldRetryReset(Reset reason, bool upstream_request_started, std::function<void()> cb);
  // Whether the headers would be retried (for an attempt that was already retried).
  bool wouldRetryFromHeaders(const HeaderMap& response_headers) const;
  DoRetryType doRetryType() const { return do_retry_type_; }

private:
  enum class Decision { NoRetry, RetryWithBackoff, RetryImmediately };
  RetryState(const std::optional<bootstrap::RetryPolicy>& policy, HeaderMap& request_headers, ClusterStats& cluster,
             Dispatcher& dispatcher);
  Decision wouldRetryFromReset(Reset reason, bool upstream_request_started) const;
  Status shouldRetry(Decision d, std::function<void()> cb);
  void resetRetry();
  uint64_t nextBackOffMs();

  ClusterStats& cluster_;
  Dispatcher& dispatcher_;
  uint32_t retry_on_ = 0;
  uint32_t retries_remaining_ = 1;
  std::vector<uint32_t> retriable_status_codes_;
  uint64_t base_interval_ms_, max_interval_ms_, next_interval_ms_;
  TimerPtr retry_timer_;
  std::function<void()> callback_;
  bool holds_retry_ = false;  // counted in the cluster's retries_open
  DoRetryType do_retry_type_ = DoRetryType::Immediately;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} // namespace moe
