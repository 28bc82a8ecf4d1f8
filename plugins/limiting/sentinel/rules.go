package sentinel

import (
	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/core/isolation"
	"github.com/alibaba/sentinel-golang/core/system"

	"github.com/moeproxy/moe/shared/variables"
)

// ruleSet is one set of per-resource rules: the normal rules, or the pressure
// rules. Translation to sentinel's rule types happens here and nowhere else.
type ruleSet struct {
	flows []FlowRule
	isos  []IsolationRule
	cbs   []BreakerRule
	hots  []HotspotRule
	// hotArg[i] is the position in Entry's args of hots[i]'s rendered key.
	hotArg []int
}

func (rs *ruleSet) empty() bool {
	return len(rs.flows)+len(rs.isos)+len(rs.cbs)+len(rs.hots) == 0
}

// spaceRules are the rules of a namespace, built from one config.
type spaceRules struct {
	hash     string // content hash of the config they come from
	normal   ruleSet
	pressure *ruleSet // nil: pressure traffic uses the normal resources
	system   []*system.Rule
	// hotKeys are the hotspot key templates (normal, then pressure rules);
	// Entry's args[i] is hotKeys[i] rendered.
	hotKeys []*variables.Template
}

func newSpaceRules(c *Config, hash string) *spaceRules {
	sr := &spaceRules{hash: hash}
	sr.normal = ruleSet{flows: c.Flow, isos: c.Isolation, cbs: c.CircuitBreakers, hots: c.Hotspot}
	for i := range c.Hotspot {
		sr.normal.hotArg = append(sr.normal.hotArg, len(sr.hotKeys))
		sr.hotKeys = append(sr.hotKeys, c.Hotspot[i].Key)
	}
	if p := c.PressureTest; p != nil {
		ps := &ruleSet{flows: p.Flow, isos: p.Isolation, cbs: p.CircuitBreakers, hots: p.Hotspot}
		for i := range p.Hotspot {
			ps.hotArg = append(ps.hotArg, len(sr.hotKeys))
			sr.hotKeys = append(sr.hotKeys, p.Hotspot[i].Key)
		}
		if !ps.empty() {
			sr.pressure = ps
		}
	}
	for i := range c.System {
		sr.system = append(sr.system, c.System[i].sentinel())
	}
	return sr
}

// sentinelRules are the rules of one sentinel resource.
type sentinelRules struct {
	flows []*flow.Rule
	isos  []*isolation.Rule
	cbs   []*circuitbreaker.Rule
	hots  []*hotspot.Rule
}

// pick returns the rules of a kind for a rendered name: the rules naming it,
// or, when none does, the rules naming no resource (they apply to every name).
func pick[R any](rules []R, name func(*R) string, key string) []int {
	var named, all []int
	for i := range rules {
		switch name(&rules[i]) {
		case key:
			named = append(named, i)
		case "":
			all = append(all, i)
		}
	}
	if len(named) > 0 && key != "" {
		return named
	}
	return all
}

// build translates the rules that apply to rendered name key into sentinel
// rules for the namespaced sentinel resource res.
func (rs *ruleSet) build(key, res string) sentinelRules {
	var out sentinelRules
	for _, i := range pick(rs.flows, func(r *FlowRule) string { return r.Resource }, key) {
		out.flows = append(out.flows, rs.flows[i].sentinel(res))
	}
	for _, i := range pick(rs.isos, func(r *IsolationRule) string { return r.Resource }, key) {
		out.isos = append(out.isos, &isolation.Rule{
			Resource:   res,
			MetricType: isolation.Concurrency,
			Threshold:  rs.isos[i].MaxConcurrency,
		})
	}
	for _, i := range pick(rs.cbs, func(r *BreakerRule) string { return r.Resource }, key) {
		out.cbs = append(out.cbs, rs.cbs[i].sentinel(res))
	}
	for _, i := range pick(rs.hots, func(r *HotspotRule) string { return r.Resource }, key) {
		out.hots = append(out.hots, rs.hots[i].sentinel(res, rs.hotArg[i]))
	}
	return out
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

func (r *SystemRule) sentinel() *system.Rule {
	sr := &system.Rule{TriggerCount: r.Threshold, Strategy: system.NoAdaptive}
	switch r.Metric {
	case "load":
		sr.MetricType = system.Load
	case "cpu":
		sr.MetricType = system.CpuUsage
	case "concurrency":
		sr.MetricType = system.Concurrency
	case "inbound_qps":
		sr.MetricType = system.InboundQPS
	case "avg_rt":
		sr.MetricType = system.AvgRT
	}
	if r.Adaptive == "bbr" {
		sr.Strategy = system.BBR
	}
	return sr
}
