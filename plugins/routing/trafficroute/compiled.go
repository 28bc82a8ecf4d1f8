package trafficroute

import (
	"strings"

	"github.com/moeproxy/moe/plugins/routing/internal/target"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
	"github.com/moeproxy/moe/shared/variables"
)

// compiled is what Init builds: rules and targets with lower-cased header
// names and their counters, so a request only compares and writes.
type compiled struct {
	clusterHeader string
	rules         []compiledRule
	def           *compiledTarget
	// clusterOf maps a target name to its cluster ("" for header-only
	// targets): Append learns from $traffic_target whether a cluster was set.
	clusterOf map[string]string

	noTarget, clientHeaderRemoved, targetMissing api.Counter
}

type compiledRule struct {
	match *match.Match
	t     *compiledTarget
}

type compiledTarget struct {
	name  string
	state any // name, boxed once: SetState takes an any

	cluster string
	set     []setHeader
	remove  []string
	chosen  api.Counter
}

type setHeader struct {
	name  string
	value *variables.Template
}

// Init compiles the rules and defines the metrics: target_<name> per target
// name (lower case, other characters as '_'), no_target,
// client_header_removed, target_missing.
func (c *Config) Init(env api.ConfigEnv) error {
	m := env.Metrics()
	c.clusterHeader = strings.ToLower(c.ClusterHeader)
	c.clusterOf = map[string]string{}
	build := func(t *Target) *compiledTarget {
		ct := &compiledTarget{name: t.Name, state: t.Name, cluster: t.Cluster, chosen: m.Counter("target_" + target.MetricName(t.Name))}
		for _, h := range t.SetHeaders {
			ct.set = append(ct.set, setHeader{name: strings.ToLower(h.Name), value: h.Value})
		}
		for _, h := range t.RemoveHeaders {
			ct.remove = append(ct.remove, strings.ToLower(h))
		}
		c.clusterOf[t.Name] = t.Cluster
		return ct
	}
	c.rules = make([]compiledRule, len(c.Rules))
	for i := range c.Rules {
		c.rules[i] = compiledRule{match: c.Rules[i].Match, t: build(&c.Rules[i].Target)}
	}
	if c.Default != nil {
		c.def = build(c.Default)
	}
	c.noTarget = m.Counter("no_target")
	c.clientHeaderRemoved = m.Counter("client_header_removed")
	c.targetMissing = m.Counter("target_missing")
	return nil
}
