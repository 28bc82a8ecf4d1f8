package sentinel

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/core/isolation"
	"github.com/alibaba/sentinel-golang/core/system"

	"github.com/moeproxy/moe/shared/api"
)

// overflowKey is the rendered name that requests share once a namespace has
// max_resources resources.
const overflowKey = "~overflow"

// pressureSuffix marks the sentinel resource of pressure-test traffic.
const pressureSuffix = "#pressure"

// manager owns sentinel's rule lists. It is process-wide on purpose: sentinel
// keeps one rule list per rule kind per process (flow.LoadRules replaces every
// flow rule, system.LoadRules every system rule), while Envoy keeps many
// plugin configs alive at once (routes, and old and new versions during an
// update). The manager is the only code that loads rules into sentinel: it
// loads per-resource rules for namespaced resources only, and merges the
// system rules of every live config.
var mgr = &manager{spaces: map[string]*space{}}

type manager struct {
	mu     sync.Mutex
	spaces map[string]*space
	// system is the merged system rule list (read by the pressure slot).
	system atomic.Pointer[[]*system.Rule]
}

// space is the state of one namespace: one per distinct config content (or
// explicit namespace), shared by the live configs that have it.
type space struct {
	name    string
	refs    int
	maxRes  int
	metrics api.Metrics
	// rules are the namespace's rules; replaced when a config with other
	// content joins an explicit namespace (the newest config wins).
	rules atomic.Pointer[spaceRules]

	// resources maps a rendered name to its resource; copy-on-write so that the
	// per-request lookup takes no lock and allocates nothing.
	resources atomic.Pointer[map[string]*resource]
	full      atomic.Bool
	overflow  atomic.Pointer[resource]
	dead      bool
}

// resource is one sentinel resource (and its pressure twin) of a namespace.
type resource struct {
	name     string
	key      string
	pressure *resource                            // == self when pressure traffic shares the resource
	wrap     atomic.Pointer[base.ResourceWrapper] // see wrapper
	passed   api.Counter
	blocked  [numReasons]api.Counter
}

// acquire registers a config's rules under its namespace (refcounted).
func (m *manager) acquire(ns string, sr *spaceRules, maxRes int, metrics api.Metrics) *space {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sp, ok := m.spaces[ns]; ok {
		sp.refs++
		if old := sp.rules.Load(); old.hash != sr.hash {
			// An explicit namespace shared by different configs, typically a new
			// version of the same route's config: its rules replace the old ones
			// in place; sentinel keeps the statistics of resources whose rules
			// keep the same window.
			sp.rules.Store(sr)
			if maxRes > sp.maxRes {
				sp.maxRes = maxRes
				sp.full.Store(false)
			}
			m.reloadLocked(sp, old)
			if len(old.system) > 0 || len(sr.system) > 0 {
				m.reloadSystemLocked()
			}
		}
		return sp
	}
	sp := &space{name: ns, refs: 1, maxRes: maxRes, metrics: metrics}
	sp.rules.Store(sr)
	empty := map[string]*resource{}
	sp.resources.Store(&empty)
	m.spaces[ns] = sp
	if len(sr.system) > 0 {
		m.reloadSystemLocked()
	}
	return sp
}

// reloadLocked rebuilds every materialized resource of sp with its current
// rules and unloads the rules of sentinel resources that no longer exist.
func (m *manager) reloadLocked(sp *space, old *spaceRules) {
	cur := *sp.resources.Load()
	next := make(map[string]*resource, len(cur))
	for k := range cur {
		next[k] = m.newResourceLocked(sp, k)
	}
	for k, r := range cur {
		if r.pressure != r && next[k].pressure == next[k] {
			clearResource(r.pressure.name) // pressure rules were removed
		}
	}
	sp.resources.Store(&next)
	if ov := sp.overflow.Load(); ov != nil {
		sp.overflow.Store(next[overflowKey])
	}
}

func clearResource(name string) {
	// Sentinel has no way to drop a resource's statistics node; only its rules
	// go. max_resources bounds what is left behind per namespace.
	_ = flow.ClearRulesOfResource(name)
	_ = isolation.ClearRulesOfResource(name)
	_ = circuitbreaker.ClearRulesOfResource(name)
	_ = hotspot.ClearRulesOfResource(name)
}

// release drops a config's reference; the last one unloads its rules.
func (m *manager) release(sp *space) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sp.refs--
	if sp.refs > 0 {
		return
	}
	sp.dead = true
	if m.spaces[sp.name] == sp {
		delete(m.spaces, sp.name)
	}
	for _, r := range *sp.resources.Load() {
		clearResource(r.name)
		if r.pressure != r {
			clearResource(r.pressure.name)
		}
	}
	if len(sp.rules.Load().system) > 0 {
		m.reloadSystemLocked()
	}
}

// reloadSystemLocked loads the union of all live namespaces' system rules.
func (m *manager) reloadSystemLocked() {
	seen := map[system.Rule]bool{}
	var merged []*system.Rule
	names := make([]string, 0, len(m.spaces))
	for n := range m.spaces {
		names = append(names, n)
	}
	sort.Strings(names) // a stable order keeps LoadRules from reloading for nothing
	for _, n := range names {
		for _, r := range m.spaces[n].rules.Load().system {
			if !seen[*r] {
				seen[*r] = true
				merged = append(merged, r)
			}
		}
	}
	if _, err := system.LoadRules(merged); err != nil {
		logger.Errorf("loading system rules: %v", err)
	}
	m.system.Store(&merged)
}

// lookup returns the resource of a rendered name (key, as bytes to avoid a
// conversion on the hot path), creating it on first use.
func (sp *space) lookup(key []byte) *resource {
	if r := (*sp.resources.Load())[string(key)]; r != nil {
		return r
	}
	if sp.full.Load() {
		return sp.overflow.Load()
	}
	return mgr.materialize(sp, string(key))
}

func (m *manager) materialize(sp *space, key string) *resource {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := *sp.resources.Load()
	if r := cur[key]; r != nil {
		return r
	}
	if sp.full.Load() {
		return sp.overflow.Load()
	}
	next := make(map[string]*resource, len(cur)+2)
	for k, v := range cur {
		next[k] = v
	}
	// One slot stays free for the overflow resource.
	if len(cur) >= sp.maxRes-1 && key != overflowKey {
		ov := cur[overflowKey]
		if ov == nil {
			ov = m.newResourceLocked(sp, overflowKey)
			next[overflowKey] = ov
			sp.resources.Store(&next)
		}
		sp.overflow.Store(ov)
		sp.full.Store(true)
		return ov
	}
	r := m.newResourceLocked(sp, key)
	next[key] = r
	sp.resources.Store(&next)
	return r
}

func (m *manager) newResourceLocked(sp *space, key string) *resource {
	rules := sp.rules.Load()
	r := sp.newResource(key, sp.name+"/"+key, &rules.normal, "")
	if rules.pressure == nil {
		r.pressure = r
	} else {
		r.pressure = sp.newResource(key, r.name+pressureSuffix, rules.pressure, "pressure_")
		r.pressure.pressure = r.pressure
	}
	return r
}

func (sp *space) newResource(key, name string, rs *ruleSet, metricPrefix string) *resource {
	r := &resource{name: name, key: key}
	if sp.metrics != nil {
		p := "res_" + sanitize(key) + "_" + metricPrefix
		r.passed = sp.metrics.Counter(p + "passed")
		for i := reason(1); i < numReasons; i++ {
			r.blocked[i] = sp.metrics.Counter(p + "blocked_" + metricReason[i])
		}
	}
	if sp.dead {
		return r // the config is gone; requests still running pass
	}
	sr := rs.build(key, name)
	load := func(_ bool, err error) {
		if err != nil {
			logger.Errorf("loading rules of %q: %v", name, err)
		}
	}
	// Each kind is loaded even when empty: that clears rules a previous version
	// of an explicit namespace had.
	load(flow.LoadRulesOfResource(name, sr.flows))
	load(isolation.LoadRulesOfResource(name, sr.isos))
	load(circuitbreaker.LoadRulesOfResource(name, sr.cbs))
	load(hotspot.LoadRulesOfResource(name, sr.hots))
	return r
}

// sanitize turns a rendered name into a metric name part (at most 64 bytes).
func sanitize(s string) string {
	if s == "" {
		return "_"
	}
	if len(s) > 64 {
		s = s[:64]
	}
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')) {
			b[i] = '_'
		}
	}
	return string(b)
}

// pressureSlot sheds pressure-test traffic first: it checks the merged system
// rules with thresholds scaled by system_ratio and without BBR leniency, so
// pressure traffic is refused before sentinel's system slot refuses anybody.
// It only reads sentinel's own system statistics.
type pressureSlot struct{ ratio float64 }

func (s *pressureSlot) Order() uint32 { return system.RuleCheckSlotOrder - 1 }

func (s *pressureSlot) Check(ctx *base.EntryContext) *base.TokenResult {
	if ctx.Resource.FlowType() != base.Inbound {
		return nil
	}
	rules := mgr.system.Load()
	if rules == nil {
		return nil
	}
	for _, r := range *rules {
		v := systemValue(r.MetricType)
		limit := r.TriggerCount * s.ratio
		if v >= limit && v >= 0 {
			return base.NewTokenResultBlockedWithCause(base.BlockTypeSystemFlow, "pressure-test traffic shed by system protection", r, v)
		}
	}
	return nil
}

// newPressureChain is newSlotChain plus the pressure slot.
func newPressureChain(rs *ruleSet, inbound bool, ratio float64) *base.SlotChain {
	sc := newSlotChain(rs, inbound)
	sc.AddRuleCheckSlot(&pressureSlot{ratio: ratio})
	return sc
}
