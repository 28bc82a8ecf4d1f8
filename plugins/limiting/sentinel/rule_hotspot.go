package sentinel

import (
	"time"

	"github.com/alibaba/sentinel-golang/core/hotspot"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// HotspotRule limits per value of a key (sentinel hotspot param rule):
// config, validation and translation to sentinel's hotspot.Rule.
type HotspotRule struct {
	// Resource restricts the rule to one rendered name (empty: every name).
	Resource string `json:"resource"`
	// Key is rendered per request, e.g. "$header_x-user". Requests where it is
	// empty are not limited by this rule.
	Key *variables.Template `json:"key"`
	// Metric: "qps" (default) or "concurrency".
	Metric string `json:"metric"`
	// Threshold per value per Duration (qps) or concurrent (concurrency).
	Threshold int64 `json:"threshold"`
	// Burst adds extra tokens (qps, reject).
	Burst int64 `json:"burst"`
	// Duration is the qps window (default 1s, whole seconds).
	Duration api.Duration `json:"duration"`
	// Behavior: "reject" (default) or "throttling" (qps only).
	Behavior string `json:"behavior"`
	// MaxQueueingTime bounds a throttled request's wait (default 500ms).
	MaxQueueingTime api.Duration `json:"max_queueing_time"`
	// MaxKeys bounds the values tracked (LRU, default 10000).
	MaxKeys int64 `json:"max_keys"`
	// Overrides sets a threshold for specific values, e.g. {"vip": 100}.
	Overrides map[string]int64 `json:"overrides"`
}

var (
	hotspotMetrics  = []string{"qps", "concurrency"}
	hotspotBehavior = []string{"reject", "throttling"}
)

func (r *HotspotRule) validate(f string) error {
	if err := checkResourceName(api.Field(f, "resource"), r.Resource); err != nil {
		return err
	}
	if r.Key == nil {
		return api.FieldErrorf(api.Field(f, "key"), "is required (a template such as \"$header_x-user\")")
	}
	if r.Metric == "" {
		r.Metric = "qps"
	}
	if err := api.CheckOneOf(api.Field(f, "metric"), r.Metric, hotspotMetrics...); err != nil {
		return err
	}
	if r.Behavior == "" {
		r.Behavior = "reject"
	}
	if err := api.CheckOneOf(api.Field(f, "behavior"), r.Behavior, hotspotBehavior...); err != nil {
		return err
	}
	if r.Metric == "concurrency" && r.Behavior == "throttling" {
		return api.FieldErrorf(api.Field(f, "behavior"), "throttling needs metric qps")
	}
	if err := api.CheckMin(api.Field(f, "threshold"), r.Threshold, 0); err != nil {
		return err
	}
	if err := api.CheckMin(api.Field(f, "burst"), r.Burst, 0); err != nil {
		return err
	}
	if err := api.CheckMin(api.Field(f, "duration"), orDefault(&r.Duration, time.Second), time.Second); err != nil {
		return err
	}
	if r.Duration.D()%time.Second != 0 {
		return api.FieldErrorf(api.Field(f, "duration"), "must be whole seconds, got %v", r.Duration.D())
	}
	if r.Behavior == "throttling" {
		if err := api.CheckRange(api.Field(f, "max_queueing_time"), orDefault(&r.MaxQueueingTime, 500*time.Millisecond), time.Millisecond, time.Minute); err != nil {
			return err
		}
	}
	if r.MaxKeys == 0 {
		r.MaxKeys = 10000
	}
	if err := api.CheckRange(api.Field(f, "max_keys"), r.MaxKeys, 1, 1_000_000); err != nil {
		return err
	}
	for k, v := range r.Overrides {
		if err := api.CheckMin(api.Field(f, "overrides", k), v, 0); err != nil {
			return err
		}
	}
	return nil
}

func (r *HotspotRule) sentinel(res string, argIndex int) *hotspot.Rule {
	hr := &hotspot.Rule{
		Resource:          res,
		MetricType:        hotspot.QPS,
		ControlBehavior:   hotspot.Reject,
		ParamIndex:        argIndex,
		Threshold:         r.Threshold,
		BurstCount:        r.Burst,
		DurationInSec:     int64(r.Duration.D().Seconds()),
		ParamsMaxCapacity: r.MaxKeys,
	}
	if r.Metric == "concurrency" {
		hr.MetricType = hotspot.Concurrency
	}
	if r.Behavior == "throttling" {
		hr.ControlBehavior = hotspot.Throttling
		hr.MaxQueueingTimeMs = r.MaxQueueingTime.D().Milliseconds()
	}
	if len(r.Overrides) > 0 {
		hr.SpecificItems = make(map[interface{}]int64, len(r.Overrides))
		for k, v := range r.Overrides {
			// Keys are matched against the rendered key, a string.
			hr.SpecificItems[k] = v
		}
	}
	return hr
}
