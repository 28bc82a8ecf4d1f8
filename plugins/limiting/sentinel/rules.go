package sentinel

import (
	"strings"
	"time"

	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/core/isolation"
	"github.com/alibaba/sentinel-golang/core/system"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// Each rule kind has its own file, as in sentinel-golang (core/flow,
// core/isolation, ...): rule_flow.go, rule_isolation.go,
// rule_circuitbreaker.go, rule_hotspot.go and rule_system.go hold the config
// type, its validation and its translation to sentinel's rule type. This file
// holds what they share and the per-resource rule selection.

// ruleSet is one set of per-resource rules: the normal rules, or the pressure
// rules. Translation to sentinel's rule types happens through it and nowhere else.
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
	// breakers: some rule set has circuit breakers, so responses must be
	// classified (reading the response status copies the response headers).
	breakers bool
	// entry and pressureEntry are how normal and pressure traffic enter
	// sentinel: the traffic type and a slot chain with the slots of these
	// rules only (slotchain.go). pressureEntry is nil without pressure_test.
	entry, pressureEntry *entryKind
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
	sr.breakers = len(sr.normal.cbs) > 0 || sr.pressure != nil && len(sr.pressure.cbs) > 0
	for i := range c.System {
		sr.system = append(sr.system, c.System[i].sentinel())
	}
	// Only inbound entries pass sentinel's system slot and feed its inbound
	// statistics: routes without system rules are not shed by them.
	inbound := len(sr.system) > 0
	traffic := base.Outbound
	if inbound {
		traffic = base.Inbound
	}
	sr.entry = &entryKind{traffic: traffic, chain: newSlotChain(&sr.normal, inbound)}
	if p := c.PressureTest; p != nil {
		rs := &sr.normal // pressure traffic without rules of its own uses the normal resources
		if sr.pressure != nil {
			rs = sr.pressure
		}
		sr.pressureEntry = &entryKind{traffic: traffic, chain: newPressureChain(rs, inbound, p.SystemRatio)}
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
		out.isos = append(out.isos, rs.isos[i].sentinel(res))
	}
	for _, i := range pick(rs.cbs, func(r *BreakerRule) string { return r.Resource }, key) {
		out.cbs = append(out.cbs, rs.cbs[i].sentinel(res))
	}
	for _, i := range pick(rs.hots, func(r *HotspotRule) string { return r.Resource }, key) {
		out.hots = append(out.hots, rs.hots[i].sentinel(res, rs.hotArg[i]))
	}
	return out
}

// check builds every rule of the namespace ns as sentinel gets it and runs
// sentinel's own validators (flow.IsValidRule, ...): a rule sentinel would
// refuse when a request first uses its resource (it would log the refusal and
// run without the rule) is a config error instead, naming the rule.
func (sr *spaceRules) check(ns string) error {
	if err := sr.normal.check("", ns+"/-"); err != nil {
		return err
	}
	if sr.pressure != nil {
		if err := sr.pressure.check("pressure_test", ns+"/-"+pressureSuffix); err != nil {
			return err
		}
	}
	for i, r := range sr.system {
		if err := system.IsValidSystemRule(r); err != nil {
			return refused(api.Field("system", i), err)
		}
	}
	return nil
}

// check validates the rules of a set as rules of resource res; prefix is the
// set's config field ("" or "pressure_test").
func (rs *ruleSet) check(prefix, res string) error {
	for i := range rs.flows {
		if err := flow.IsValidRule(rs.flows[i].sentinel(res)); err != nil {
			return refused(api.Field(prefix, "flow", i), err)
		}
	}
	for i := range rs.isos {
		if err := isolation.IsValidRule(rs.isos[i].sentinel(res)); err != nil {
			return refused(api.Field(prefix, "isolation", i), err)
		}
	}
	for i := range rs.cbs {
		if err := circuitbreaker.IsValidRule(rs.cbs[i].sentinel(res)); err != nil {
			return refused(api.Field(prefix, "circuit_breakers", i), err)
		}
	}
	for i := range rs.hots {
		if err := hotspot.IsValidRule(rs.hots[i].sentinel(res, rs.hotArg[i])); err != nil {
			return refused(api.Field(prefix, "hotspot", i), err)
		}
	}
	return nil
}

func refused(field string, err error) error {
	return api.FieldErrorf(field, "sentinel refuses the rule: %v", err)
}

// validateRules validates (and fills the defaults of) one rule set; prefix
// is "" or "pressure_test".
func validateRules(prefix string, flows []FlowRule, isos []IsolationRule, cbs []BreakerRule, hots []HotspotRule) error {
	for i := range flows {
		if err := flows[i].validate(api.Field(prefix, "flow", i)); err != nil {
			return err
		}
	}
	for i := range isos {
		if err := isos[i].validate(api.Field(prefix, "isolation", i)); err != nil {
			return err
		}
	}
	for i := range cbs {
		if err := cbs[i].validate(api.Field(prefix, "circuit_breakers", i)); err != nil {
			return err
		}
	}
	for i := range hots {
		if err := hots[i].validate(api.Field(prefix, "hotspot", i)); err != nil {
			return err
		}
	}
	return nil
}

func checkResourceName(field, r string) error {
	if strings.Contains(r, "#") {
		return api.FieldErrorf(field, "must not contain '#' (reserved for pressure resources)")
	}
	return nil
}

// orDefault sets an unset duration to def and returns it.
func orDefault(d *api.Duration, def time.Duration) time.Duration {
	if *d == 0 {
		*d = api.Duration(def)
	}
	return d.D()
}
