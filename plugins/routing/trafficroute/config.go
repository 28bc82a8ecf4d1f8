package trafficroute

import (
	"strings"

	"github.com/moeproxy/moe/plugins/routing/internal/target"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
	"github.com/moeproxy/moe/shared/variables"
)

// maxRules bounds the rule list (each request walks it in order).
const maxRules = 1024

// Config is the traffic-route config.
type Config struct {
	// ClusterHeader is the request header a cluster target is written to; the
	// route table reads it with `cluster_header`. The plugin owns it: a value
	// the client sent is always removed first (default "x-moe-cluster").
	ClusterHeader string `json:"cluster_header"`
	// Rules are tried in order; the first whose match holds picks its target.
	Rules []Rule `json:"rules"`
	// Default is the target of a request no rule matched (none: the route
	// table decides as if the plugin were not there).
	Default *Target `json:"default"`

	compiled
}

// Rule is a condition and the target it picks.
type Rule struct {
	// Match is the condition (shared/match: path, methods, headers, query,
	// cookies, vars, cel). Required and not empty: a target for every request
	// is the default.
	Match *match.Match `json:"match"`
	Target
}

// Target is where a request goes: a cluster, header changes followed by a
// route re-match, or both.
type Target struct {
	// Name names the target in metrics and in $traffic_target (default: the
	// cluster, else "rule<N>" / "default").
	Name string `json:"name"`
	// Cluster is written to ClusterHeader.
	Cluster string `json:"cluster"`
	// SetHeaders are request headers set (replacing every value) before the
	// route is matched again.
	SetHeaders []HeaderValue `json:"set_headers"`
	// RemoveHeaders are request headers removed before the route is matched
	// again.
	RemoveHeaders []string `json:"remove_headers"`
}

// HeaderValue is a header and the template of its value.
type HeaderValue struct {
	// Name of the header.
	Name string `json:"name"`
	// Value is a variable template ("v2", "$cookie_unit"), rendered per request.
	Value *variables.Template `json:"value"`
}

func newConfig() any {
	return &Config{ClusterHeader: target.DefaultClusterHeader}
}

// Validate checks the config and fills in target names.
func (c *Config) Validate() error {
	if err := api.CheckHeaderName("cluster_header", c.ClusterHeader); err != nil {
		return err
	}
	if len(c.Rules) > maxRules {
		return api.FieldErrorf("rules", "has %d rules, at most %d are allowed", len(c.Rules), maxRules)
	}
	if len(c.Rules) == 0 && c.Default == nil {
		return api.FieldErrorf("rules", "give rules, a default, or both")
	}
	clusterOf := map[string]string{} // target name -> cluster, to refuse one name for two clusters
	for i := range c.Rules {
		r := &c.Rules[i]
		at := api.Field("rules", i)
		if r.Match.IsEmpty() {
			return api.FieldErrorf(at+".match", "is required and must have a condition (a target for every request is the default)")
		}
		if err := c.checkTarget(at, &r.Target, "rule"+itoa(i), clusterOf); err != nil {
			return err
		}
	}
	if c.Default != nil {
		if err := c.checkTarget("default", c.Default, "default", clusterOf); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) checkTarget(at string, t *Target, fallback string, clusterOf map[string]string) error {
	if t.Cluster == "" && len(t.SetHeaders) == 0 && len(t.RemoveHeaders) == 0 {
		return api.FieldErrorf(at, "give cluster, set_headers or remove_headers")
	}
	if t.Cluster != "" {
		if err := target.CheckCluster(at+".cluster", t.Cluster); err != nil {
			return err
		}
	}
	ch := strings.ToLower(c.ClusterHeader)
	check := func(field, name string) error {
		if err := api.CheckHeaderName(field, name); err != nil {
			return err
		}
		switch l := strings.ToLower(name); {
		case l == ch:
			return api.FieldErrorf(field, "%q is cluster_header: use cluster", name)
		case l == "host":
			return api.FieldErrorf(field, "the host is :authority; change it with the rewrite plugin")
		}
		return nil
	}
	for j, h := range t.SetHeaders {
		if err := check(api.Field(at+".set_headers", j, "name"), h.Name); err != nil {
			return err
		}
		if h.Value == nil {
			return api.FieldErrorf(api.Field(at+".set_headers", j, "value"), "is required")
		}
	}
	for j, h := range t.RemoveHeaders {
		if err := check(api.Field(at+".remove_headers", j), h); err != nil {
			return err
		}
	}
	if t.Name == "" {
		t.Name = t.Cluster
		if t.Name == "" {
			t.Name = fallback
		}
	} else if err := target.CheckName(at+".name", t.Name); err != nil {
		return err
	}
	if prev, dup := clusterOf[t.Name]; dup && prev != t.Cluster {
		return api.FieldErrorf(at+".name", "%q already names a target with cluster %q", t.Name, prev)
	}
	clusterOf[t.Name] = t.Cluster
	return nil
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
