package sentinel

import (
	"time"

	"github.com/alibaba/sentinel-golang/core/circuitbreaker"

	"github.com/moeproxy/moe/shared/api"
)

// BreakerRule is a circuit breaker (sentinel circuitbreaker rule): config,
// validation and translation to sentinel's circuitbreaker.Rule.
type BreakerRule struct {
	// Resource restricts the rule to one rendered name (empty: every name).
	Resource string `json:"resource"`
	// Strategy: "slow_request_ratio", "error_ratio" or "error_count".
	Strategy string `json:"strategy"`
	// Threshold is a ratio in (0,1] for the ratio strategies, a count for
	// error_count.
	Threshold float64 `json:"threshold"`
	// MaxAllowedRT marks a request slow (slow_request_ratio only).
	MaxAllowedRT api.Duration `json:"max_allowed_rt"`
	// RetryTimeout is how long the breaker stays open before a probe (default 5s).
	RetryTimeout api.Duration `json:"retry_timeout"`
	// MinRequestAmount: fewer requests in the window never trip it (default 5).
	MinRequestAmount uint64 `json:"min_request_amount"`
	// StatInterval is the breaker's statistic window (default 1s).
	StatInterval api.Duration `json:"stat_interval"`
	// ProbeNum: successful probes needed in half-open to close (default 0: the
	// first probe decides, as in sentinel).
	ProbeNum uint64 `json:"probe_num"`
}

var breakerStrats = []string{"slow_request_ratio", "error_ratio", "error_count"}

func (r *BreakerRule) validate(f string) error {
	if err := checkResourceName(api.Field(f, "resource"), r.Resource); err != nil {
		return err
	}
	if err := api.CheckOneOf(api.Field(f, "strategy"), r.Strategy, breakerStrats...); err != nil {
		return err
	}
	switch r.Strategy {
	case "error_count":
		if r.Threshold < 1 {
			return api.FieldErrorf(api.Field(f, "threshold"), "must be a count >= 1 for error_count, got %v", r.Threshold)
		}
	default:
		if !(r.Threshold > 0 && r.Threshold <= 1) {
			return api.FieldErrorf(api.Field(f, "threshold"), "must be a ratio in (0, 1] for %s, got %v", r.Strategy, r.Threshold)
		}
	}
	if r.Strategy == "slow_request_ratio" && r.MaxAllowedRT.D() < time.Millisecond {
		return api.FieldErrorf(api.Field(f, "max_allowed_rt"), "is required for slow_request_ratio (at least 1ms)")
	}
	if err := api.CheckMin(api.Field(f, "retry_timeout"), orDefault(&r.RetryTimeout, 5*time.Second), time.Millisecond); err != nil {
		return err
	}
	if err := api.CheckMin(api.Field(f, "stat_interval"), orDefault(&r.StatInterval, time.Second), 10*time.Millisecond); err != nil {
		return err
	}
	if r.MinRequestAmount == 0 {
		r.MinRequestAmount = 5
	}
	return nil
}

func (r *BreakerRule) sentinel(res string) *circuitbreaker.Rule {
	interval := uint32(r.StatInterval.D().Milliseconds())
	// Ten buckets make the window slide smoothly; sentinel falls back to one
	// bucket when the interval does not divide.
	buckets := uint32(1)
	if interval%10 == 0 {
		buckets = 10
	}
	cr := &circuitbreaker.Rule{
		Resource:                     res,
		RetryTimeoutMs:               uint32(r.RetryTimeout.D().Milliseconds()),
		MinRequestAmount:             r.MinRequestAmount,
		StatIntervalMs:               interval,
		StatSlidingWindowBucketCount: buckets,
		Threshold:                    r.Threshold,
		ProbeNum:                     r.ProbeNum,
	}
	switch r.Strategy {
	case "slow_request_ratio":
		cr.Strategy = circuitbreaker.SlowRequestRatio
		cr.MaxAllowedRtMs = uint64(r.MaxAllowedRT.D().Milliseconds())
	case "error_ratio":
		cr.Strategy = circuitbreaker.ErrorRatio
	case "error_count":
		cr.Strategy = circuitbreaker.ErrorCount
	}
	return cr
}
