package stressroute

import (
	"strings"

	"github.com/moeproxy/moe/plugins/routing/internal/target"
	"github.com/moeproxy/moe/shared/api"
)

// compiled is what Init builds: lower-cased header names, the set of shadow
// clusters of the map, the prebuilt refusals and the metrics.
type compiled struct {
	markHeader, clusterHeader string
	markState                 any // MarkValue boxed once for SetState
	shadowOf                  map[string]string
	isMapShadow               map[string]bool
	mapCounters               map[string]api.Counter // per shadow cluster of the map
	refusalHeaders            api.Headers

	marked, unmarked                  api.Counter
	noShadow, noTarget, shadowMissing api.Counter
	markRemoved, shadowHeaderRemoved  api.Counter
	unmarkedRefused                   api.Counter
}

// Init builds the lookups and defines the metrics.
func (c *Config) Init(env api.ConfigEnv) error {
	m := env.Metrics()
	c.markHeader = strings.ToLower(c.MarkHeader)
	c.clusterHeader = strings.ToLower(c.ClusterHeader)
	c.markState = c.MarkValue
	c.shadowOf = c.Shadow.Clusters
	c.isMapShadow = make(map[string]bool, len(c.shadowOf))
	c.mapCounters = make(map[string]api.Counter, len(c.shadowOf))
	for _, s := range c.shadowOf {
		c.isMapShadow[s] = true
		c.mapCounters[s] = m.Counter("shadow_" + target.MetricName(s))
	}
	c.refusalHeaders = api.Headers{"content-type": {"text/plain; charset=utf-8"}}
	c.marked = m.Counter("marked")
	c.unmarked = m.Counter("unmarked")
	c.noShadow = m.Counter("refused_no_shadow")
	c.noTarget = m.Counter("refused_no_target")
	c.shadowMissing = m.Counter("shadow_missing")
	c.markRemoved = m.Counter("mark_header_removed")
	c.shadowHeaderRemoved = m.Counter("shadow_header_removed")
	c.unmarkedRefused = m.Counter("unmarked_refused")
	return nil
}

// isShadow reports whether a cluster is a shadow cluster: a value of the map,
// or a name the naming rule builds (prefix and suffix around a non-empty
// target name).
func (c *Config) isShadow(cluster string) bool {
	if c.isMapShadow[cluster] {
		return true
	}
	p, s := c.Shadow.Prefix, c.Shadow.Suffix
	if p == "" && s == "" {
		return false
	}
	return len(cluster) > len(p)+len(s) && strings.HasPrefix(cluster, p) && strings.HasSuffix(cluster, s)
}

// shadowFor is the shadow cluster of a target ("" when it has none): the
// target itself when it already is a shadow, its map entry, else the rule.
func (c *Config) shadowFor(t string) string {
	if c.isShadow(t) {
		return t
	}
	if s, ok := c.shadowOf[t]; ok {
		return s
	}
	if c.Shadow.Prefix == "" && c.Shadow.Suffix == "" {
		return ""
	}
	return c.Shadow.Prefix + t + c.Shadow.Suffix
}
