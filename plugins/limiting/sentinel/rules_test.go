package sentinel

import (
	"strings"
	"testing"

	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/core/isolation"
	"github.com/alibaba/sentinel-golang/core/system"
)

func TestBuildTranslatesEachRuleKind(t *testing.T) {
	c, err := decode(`{
		"flow":[{"threshold":50},
		        {"threshold":20,"behavior":"warm_up_throttling","warm_up_period":"4s","warm_up_cold_factor":4,"max_queueing_time":"300ms","stat_interval":"2s"}],
		"isolation":[{"max_concurrency":7}],
		"circuit_breakers":[{"strategy":"slow_request_ratio","threshold":0.5,"max_allowed_rt":"150ms","retry_timeout":"2s","stat_interval":"1s","min_request_amount":3,"probe_num":2}],
		"hotspot":[{"key":"$header_x-user","threshold":5,"burst":2,"overrides":{"vip":100}}]
	}`)
	if err != nil {
		t.Fatal(err)
	}
	rs := ruleSet{flows: c.Flow, isos: c.Isolation, cbs: c.CircuitBreakers, hots: c.Hotspot, hotArg: []int{3}}
	got := rs.build("route", "ns/route")
	if len(got.flows) != 2 || len(got.isos) != 1 || len(got.cbs) != 1 || len(got.hots) != 1 {
		t.Fatalf("rule counts: %+v", got)
	}
	f := got.flows[0]
	if f.Resource != "ns/route" || f.Threshold != 50 || f.ControlBehavior != flow.Reject || f.TokenCalculateStrategy != flow.Direct || f.StatIntervalInMs != 1000 {
		t.Errorf("reject rule: %+v", f)
	}
	f = got.flows[1]
	if f.TokenCalculateStrategy != flow.WarmUp || f.ControlBehavior != flow.Throttling || f.WarmUpPeriodSec != 4 || f.WarmUpColdFactor != 4 || f.MaxQueueingTimeMs != 300 || f.StatIntervalInMs != 2000 {
		t.Errorf("warm-up throttling rule: %+v", f)
	}
	if i := got.isos[0]; i.Threshold != 7 || i.MetricType != isolation.Concurrency {
		t.Errorf("isolation: %+v", i)
	}
	if b := got.cbs[0]; b.Strategy != circuitbreaker.SlowRequestRatio || b.MaxAllowedRtMs != 150 || b.RetryTimeoutMs != 2000 || b.MinRequestAmount != 3 || b.ProbeNum != 2 || b.StatSlidingWindowBucketCount != 10 {
		t.Errorf("breaker: %+v", b)
	}
	h := got.hots[0]
	if h.ParamIndex != 3 || h.Threshold != 5 || h.BurstCount != 2 || h.MetricType != hotspot.QPS || h.DurationInSec != 1 || h.SpecificItems["vip"] != 100 {
		t.Errorf("hotspot: %+v", h)
	}
	for _, err := range []error{flow.IsValidRule(got.flows[0]), flow.IsValidRule(got.flows[1]), isolation.IsValidRule(got.isos[0]), circuitbreaker.IsValidRule(got.cbs[0]), hotspot.IsValidRule(got.hots[0])} {
		if err != nil {
			t.Errorf("sentinel rejects a built rule: %v", err)
		}
	}
}

func TestNamedRulesReplaceUnnamedOnesOfTheSameKind(t *testing.T) {
	c, err := decode(`{
		"flow":[{"threshold":10},{"resource":"special","threshold":3}],
		"isolation":[{"max_concurrency":4}]
	}`)
	if err != nil {
		t.Fatal(err)
	}
	rs := ruleSet{flows: c.Flow, isos: c.Isolation}
	special := rs.build("special", "ns/special")
	if len(special.flows) != 1 || special.flows[0].Threshold != 3 {
		t.Errorf("special flow rules: %+v", special.flows)
	}
	if len(special.isos) != 1 {
		t.Errorf("unnamed isolation rule must still apply to special: %+v", special.isos)
	}
	other := rs.build("other", "ns/other")
	if len(other.flows) != 1 || other.flows[0].Threshold != 10 {
		t.Errorf("other flow rules: %+v", other.flows)
	}
}

func TestSystemRuleTranslation(t *testing.T) {
	cases := []struct {
		in   SystemRule
		want system.Rule
	}{
		{SystemRule{Metric: "load", Threshold: 8, Adaptive: "bbr"}, system.Rule{MetricType: system.Load, TriggerCount: 8, Strategy: system.BBR}},
		{SystemRule{Metric: "cpu", Threshold: 0.9, Adaptive: "none"}, system.Rule{MetricType: system.CpuUsage, TriggerCount: 0.9, Strategy: system.NoAdaptive}},
		{SystemRule{Metric: "concurrency", Threshold: 100, Adaptive: "none"}, system.Rule{MetricType: system.Concurrency, TriggerCount: 100, Strategy: system.NoAdaptive}},
		{SystemRule{Metric: "inbound_qps", Threshold: 1000, Adaptive: "none"}, system.Rule{MetricType: system.InboundQPS, TriggerCount: 1000, Strategy: system.NoAdaptive}},
		{SystemRule{Metric: "avg_rt", Threshold: 50, Adaptive: "none"}, system.Rule{MetricType: system.AvgRT, TriggerCount: 50, Strategy: system.NoAdaptive}},
	}
	for _, tc := range cases {
		if got := *tc.in.sentinel(); got != tc.want {
			t.Errorf("%+v -> %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestConfigsGetTheirOwnNamespaces(t *testing.T) {
	a, _ := load(t, `{"flow":[{"threshold":5}]}`)
	b, _ := load(t, `{"flow":[{"threshold":7}]}`)
	a2, _ := load(t, `{"flow":[{"threshold":5}]}`)
	if a.rt.namespace == b.rt.namespace {
		t.Fatalf("different configs share namespace %q", a.rt.namespace)
	}
	if a.rt.namespace != a2.rt.namespace || a.rt.space != a2.rt.space {
		t.Fatalf("identical configs must share a namespace: %q vs %q", a.rt.namespace, a2.rt.namespace)
	}
	named, _ := load(t, `{"namespace":"team-a","flow":[{"threshold":5}]}`)
	if named.rt.namespace != "team-a" {
		t.Fatalf("explicit namespace ignored: %q", named.rt.namespace)
	}

	ra := a.rt.space.lookup([]byte("r1"))
	rb := b.rt.space.lookup([]byte("r1"))
	if !strings.HasPrefix(ra.name, a.rt.namespace+"/") || ra.name == rb.name {
		t.Fatalf("resource names not namespaced: %q %q", ra.name, rb.name)
	}
	if got := flow.GetRulesOfResource(ra.name); len(got) != 1 || got[0].Threshold != 5 {
		t.Errorf("rules of %s: %+v", ra.name, got)
	}
	if got := flow.GetRulesOfResource(rb.name); len(got) != 1 || got[0].Threshold != 7 {
		t.Errorf("rules of %s: %+v (overwritten?)", rb.name, got)
	}
}

func TestDestroyUnloadsRulesWhenTheLastSharerGoes(t *testing.T) {
	raw := `{"namespace":"destroy-test","flow":[{"threshold":5}],"isolation":[{"max_concurrency":2}]}`
	a, _ := load(t, raw)
	b, _ := load(t, raw)
	r := a.rt.space.lookup([]byte("k"))
	a.Destroy()
	a.Destroy() // idempotent
	if len(flow.GetRulesOfResource(r.name)) != 1 {
		t.Fatal("rules unloaded while another config still uses the namespace")
	}
	b.Destroy()
	if n := len(flow.GetRulesOfResource(r.name)) + len(isolation.GetRulesOfResource(r.name)); n != 0 {
		t.Fatalf("%d rules left after the last config was destroyed", n)
	}
	// A new config of the same namespace loads its rules again.
	c, _ := load(t, raw)
	if r2 := c.rt.space.lookup([]byte("k")); len(flow.GetRulesOfResource(r2.name)) != 1 {
		t.Fatal("rules not reloaded for a new config")
	}
}

func TestSystemRulesOfAllLiveConfigsAreMerged(t *testing.T) {
	has := func(metric system.MetricType, v float64) bool {
		for _, r := range system.GetRules() {
			if r.MetricType == metric && r.TriggerCount == v {
				return true
			}
		}
		return false
	}
	a, _ := load(t, `{"namespace":"sys-a","system":[{"metric":"concurrency","threshold":1000}]}`)
	b, _ := load(t, `{"namespace":"sys-b","system":[{"metric":"inbound_qps","threshold":50000}]}`)
	if !has(system.Concurrency, 1000) || !has(system.InboundQPS, 50000) {
		t.Fatalf("merged system rules: %+v", system.GetRules())
	}
	a.Destroy()
	if has(system.Concurrency, 1000) || !has(system.InboundQPS, 50000) {
		t.Fatalf("after destroying a: %+v", system.GetRules())
	}
	b.Destroy()
	if len(system.GetRules()) != 0 {
		t.Fatalf("system rules left: %+v", system.GetRules())
	}
}

func TestMaxResourcesSendsNewNamesToTheOverflowResource(t *testing.T) {
	c, _ := load(t, `{"namespace":"overflow-test","max_resources":3,"flow":[{"threshold":5}]}`)
	sp := c.rt.space
	a, b := sp.lookup([]byte("a")), sp.lookup([]byte("b"))
	x, y := sp.lookup([]byte("x")), sp.lookup([]byte("y"))
	if a == b || a.key != "a" || b.key != "b" {
		t.Fatalf("first names must get their own resources")
	}
	if x != y || x.key != overflowKey {
		t.Fatalf("names past max_resources must share the overflow resource, got %q %q", x.key, y.key)
	}
	if sp.lookup([]byte("a")) != a {
		t.Fatal("known names keep their resource after overflow")
	}
	if n := len(*sp.resources.Load()); n != 3 {
		t.Fatalf("%d resources, want 3", n)
	}
	if len(flow.GetRulesOfResource(x.name)) != 1 {
		t.Fatal("overflow resource has no rules")
	}
}

func TestNewVersionInAnExplicitNamespaceReplacesTheRules(t *testing.T) {
	v1, _ := load(t, `{"namespace":"versioned","flow":[{"threshold":5}],"pressure_test":{"flow":[{"threshold":1}]}}`)
	r1 := v1.rt.space.lookup([]byte("k"))
	if r1.pressure == r1 || len(flow.GetRulesOfResource(r1.pressure.name)) != 1 {
		t.Fatal("v1 pressure resource missing")
	}
	// v2 arrives while v1 is still alive (as during an xDS update).
	v2, _ := load(t, `{"namespace":"versioned","flow":[{"threshold":9}]}`)
	if v2.rt.space != v1.rt.space {
		t.Fatal("an explicit namespace must be shared")
	}
	r2 := v2.rt.space.lookup([]byte("k"))
	if got := flow.GetRulesOfResource(r2.name); len(got) != 1 || got[0].Threshold != 9 {
		t.Fatalf("rules after v2: %+v", got)
	}
	if len(flow.GetRulesOfResource(r1.pressure.name)) != 0 {
		t.Fatal("v1's pressure rules survived v2")
	}
	if r2.pressure != r2 {
		t.Fatal("v2 has no pressure rules: pressure traffic must use the normal resource")
	}
	v1.Destroy()
	if got := flow.GetRulesOfResource(r2.name); len(got) != 1 || got[0].Threshold != 9 {
		t.Fatalf("destroying v1 changed v2's rules: %+v", got)
	}
}
