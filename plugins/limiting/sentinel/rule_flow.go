package sentinel

import (
	"math"
	"strings"
	"time"

	"github.com/alibaba/sentinel-golang/core/flow"

	"github.com/moeproxy/moe/shared/api"
)

// FlowRule is a QPS limit (sentinel flow rule).
type FlowRule struct {
	// Resource restricts the rule to one rendered resource name; empty means
	// every name. A named rule replaces the unnamed flow rules for that name.
	Resource string `json:"resource"`
	// Threshold is the number of requests admitted per stat_interval.
	Threshold float64 `json:"threshold"`
	// Behavior: "reject" (default), "warm_up", "throttling" (queue requests,
	// evenly spaced, for at most max_queueing_time) or "warm_up_throttling".
	Behavior string `json:"behavior"`
	// StatInterval is the window Threshold counts in (default 1s).
	StatInterval api.Duration `json:"stat_interval"`
	// WarmUpPeriod and WarmUpColdFactor shape warm_up (default 10s, 3).
	WarmUpPeriod     api.Duration `json:"warm_up_period"`
	WarmUpColdFactor uint32       `json:"warm_up_cold_factor"`
	// MaxQueueingTime bounds a throttled request's wait (default 500ms).
	MaxQueueingTime api.Duration `json:"max_queueing_time"`
}

var flowBehaviors = []string{"reject", "warm_up", "throttling", "warm_up_throttling"}

func (r *FlowRule) validate(f string) error {
	if err := checkResourceName(f+".resource", r.Resource); err != nil {
		return err
	}
	if r.Threshold <= 0 || math.IsInf(r.Threshold, 0) || math.IsNaN(r.Threshold) {
		return api.FieldErrorf(f+".threshold", "must be > 0, got %v", r.Threshold)
	}
	if r.Behavior == "" {
		r.Behavior = "reject"
	}
	if err := oneOf(f+".behavior", r.Behavior, flowBehaviors); err != nil {
		return err
	}
	if err := positiveDuration(f+".stat_interval", &r.StatInterval, time.Second, time.Millisecond); err != nil {
		return err
	}
	if r.StatInterval.D() > 10*time.Minute {
		return api.FieldErrorf(f+".stat_interval", "must be at most 10m, got %v", r.StatInterval.D())
	}
	if strings.HasPrefix(r.Behavior, "warm_up") {
		if err := positiveDuration(f+".warm_up_period", &r.WarmUpPeriod, 10*time.Second, time.Second); err != nil {
			return err
		}
		if r.WarmUpColdFactor == 0 {
			r.WarmUpColdFactor = 3
		}
		if r.WarmUpColdFactor < 2 {
			return api.FieldErrorf(f+".warm_up_cold_factor", "must be > 1, got %d", r.WarmUpColdFactor)
		}
	}
	if strings.HasSuffix(r.Behavior, "throttling") {
		if err := positiveDuration(f+".max_queueing_time", &r.MaxQueueingTime, 500*time.Millisecond, time.Millisecond); err != nil {
			return err
		}
		if r.MaxQueueingTime.D() > time.Minute {
			return api.FieldErrorf(f+".max_queueing_time", "must be at most 1m, got %v", r.MaxQueueingTime.D())
		}
	}
	return nil
}

func (r *FlowRule) sentinel(res string) *flow.Rule {
	fr := &flow.Rule{
		Resource:               res,
		TokenCalculateStrategy: flow.Direct,
		ControlBehavior:        flow.Reject,
		Threshold:              r.Threshold,
		RelationStrategy:       flow.CurrentResource,
		StatIntervalInMs:       uint32(r.StatInterval.D().Milliseconds()),
	}
	switch r.Behavior {
	case "warm_up", "warm_up_throttling":
		fr.TokenCalculateStrategy = flow.WarmUp
		fr.WarmUpPeriodSec = uint32(r.WarmUpPeriod.D().Seconds())
		fr.WarmUpColdFactor = r.WarmUpColdFactor
	}
	switch r.Behavior {
	case "throttling", "warm_up_throttling":
		fr.ControlBehavior = flow.Throttling
		fr.MaxQueueingTimeMs = uint32(r.MaxQueueingTime.D().Milliseconds())
	}
	return fr
}
