package stressroute

import (
	"sort"
	"strings"

	"github.com/moeproxy/moe/plugins/routing/internal/target"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
)

// Config is the stress-route config.
type Config struct {
	// Match recognises test traffic (shared/match: headers, vars, cel, ...).
	// Required and not empty: an empty match would mark every request.
	Match *match.Match `json:"match"`
	// MarkHeader is set to MarkValue on marked requests (the upstream and
	// later filters see it) and removed from every other request, whatever
	// the client sent (default "x-pressure-test", what sentinel's
	// pressure_test reads by default).
	MarkHeader string `json:"mark_header"`
	// MarkValue is the value of MarkHeader and of $stress (default "true").
	MarkValue string `json:"mark_value"`
	// ClusterHeader is the header the route table's cluster_header reads
	// (default "x-moe-cluster"); traffic-route writes it too.
	ClusterHeader string `json:"cluster_header"`
	// Shadow names the shadow cluster of a target.
	Shadow Shadow `json:"shadow"`
	// MissingStatus answers marked requests that have no shadow cluster
	// (default 503).
	MissingStatus int `json:"missing_status"`
	// UnmarkedStatus answers unmarked requests whose route leads to a shadow
	// cluster (default 403).
	UnmarkedStatus int `json:"unmarked_status"`

	compiled
}

// Shadow is the naming rule and/or the map from target to shadow cluster.
type Shadow struct {
	// Prefix and Suffix build the shadow's name around the target's: with
	// suffix "-shadow", orders -> orders-shadow. Without prefix, suffix and
	// clusters the suffix is "-shadow".
	Prefix string `json:"prefix"`
	Suffix string `json:"suffix"`
	// Clusters maps a target to its shadow, taking precedence over the rule.
	// With a map and no prefix/suffix, only these targets have a shadow.
	Clusters map[string]string `json:"clusters"`
}

func newConfig() any {
	return &Config{
		MarkHeader:     "x-pressure-test",
		MarkValue:      "true",
		ClusterHeader:  target.DefaultClusterHeader,
		MissingStatus:  503,
		UnmarkedStatus: 403,
	}
}

// Validate checks the config and applies the naming default.
func (c *Config) Validate() error {
	if c.Match.IsEmpty() {
		return api.FieldErrorf("match", "is required and must have a condition (an empty match would mark every request)")
	}
	if err := api.CheckHeaderName("mark_header", c.MarkHeader); err != nil {
		return err
	}
	if err := target.CheckCluster("mark_value", c.MarkValue); err != nil { // a visible token
		return err
	}
	if err := api.CheckHeaderName("cluster_header", c.ClusterHeader); err != nil {
		return err
	}
	if strings.EqualFold(c.MarkHeader, c.ClusterHeader) {
		return api.FieldErrorf("mark_header", "must differ from cluster_header")
	}
	if err := api.CheckStatus("missing_status", c.MissingStatus); err != nil {
		return err
	}
	if err := api.CheckStatus("unmarked_status", c.UnmarkedStatus); err != nil {
		return err
	}
	s := &c.Shadow
	for _, f := range []struct{ name, v string }{{"shadow.prefix", s.Prefix}, {"shadow.suffix", s.Suffix}} {
		if f.v != "" {
			if err := target.CheckCluster(f.name, f.v); err != nil {
				return err
			}
		}
	}
	if s.Prefix == "" && s.Suffix == "" && len(s.Clusters) == 0 {
		s.Suffix = "-shadow"
	}
	keys := make([]string, 0, len(s.Clusters))
	for k := range s.Clusters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		at := "shadow.clusters." + k
		if err := target.CheckCluster(at, k); err != nil {
			return api.FieldErrorf(at, "the target name: %v", err)
		}
		v := s.Clusters[k]
		if err := target.CheckCluster(at, v); err != nil {
			return err
		}
		if v == k {
			return api.FieldErrorf(at, "a cluster cannot be its own shadow")
		}
		if _, prod := s.Clusters[v]; prod {
			return api.FieldErrorf(at, "%q is a target here and a shadow of %q: a cluster is either production or shadow", v, k)
		}
	}
	return nil
}
