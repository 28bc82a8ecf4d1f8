package sentinel

import (
	"math"
	"strings"
	"time"

	"github.com/alibaba/sentinel-golang/core/flow"

	"github.com/moeproxy/moe/shared/api"
)

// FlowRule is a QPS limit (sentinel flow rule): config, validation and
// translation to sentinel's flow.Rule.
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
	// WarmUpPeriod: warm_up reaches Threshold after this long (default 10s).
	WarmUpPeriod api.Duration `json:"warm_up_period"`
	// WarmUpColdFactor: warm_up starts at Threshold/WarmUpColdFactor (default 3).
	WarmUpColdFactor uint32 `json:"warm_up_cold_factor"`
	// MaxQueueingTime bounds a throttled request's wait (default 500ms).
	MaxQueueingTime api.Duration `json:"max_queueing_time"`
}

var flowBehaviors = []string{"reject", "warm_up", "throttling", "warm_up_throttling"}

func (r *FlowRule) validate(f string) error {
	if err := checkResourceName(api.Field(f, "resource"), r.Resource); err != nil {
		return err
	}
	// Strictly positive (CheckMin would accept 0); JSON has no NaN or Inf, the
	// check is for configs built in Go.
	if r.Threshold <= 0 || math.IsInf(r.Threshold, 0) || math.IsNaN(r.Threshold) {
		return api.FieldErrorf(api.Field(f, "threshold"), "must be > 0, got %v", r.Threshold)
	}
	if r.Behavior == "" {
		r.Behavior = "reject"
	}
	if err := api.CheckOneOf(api.Field(f, "behavior"), r.Behavior, flowBehaviors...); err != nil {
		return err
	}
	if err := api.CheckRange(api.Field(f, "stat_interval"), orDefault(&r.StatInterval, time.Second), time.Millisecond, 10*time.Minute); err != nil {
		return err
	}
	if strings.HasPrefix(r.Behavior, "warm_up") {
		if err := api.CheckMin(api.Field(f, "warm_up_period"), orDefault(&r.WarmUpPeriod, 10*time.Second), time.Second); err != nil {
			return err
		}
		if r.WarmUpColdFactor == 0 {
			r.WarmUpColdFactor = 3
		}
		if err := api.CheckMin(api.Field(f, "warm_up_cold_factor"), r.WarmUpColdFactor, 2); err != nil {
			return err
		}
	}
	if strings.HasSuffix(r.Behavior, "throttling") {
		if err := api.CheckRange(api.Field(f, "max_queueing_time"), orDefault(&r.MaxQueueingTime, 500*time.Millisecond), time.Millisecond, time.Minute); err != nil {
			return err
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
