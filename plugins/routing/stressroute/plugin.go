// Package stressroute is the stress-route plugin: pressure-test (load test)
// traffic isolation. It recognises test traffic (a match: header, variable or
// CEL), marks it for every later plugin and the upstream ($stress, a header,
// the filter state moe.state.stress), and routes it to the shadow cluster of
// its target, named by a rule (prefix/suffix) or a map. Marked traffic never
// reaches a production cluster: with no shadow it is refused. Unmarked
// traffic never reaches a shadow cluster: a shadow cluster name in the cluster
// header is removed, and a route that leads to a shadow cluster is refused.
package stressroute

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/variables"
)

// Name is the registered plugin name.
const Name = "stress-route"

// State keys (and filter state moe.state.<key>): "true" for marked requests,
// and the shadow cluster they were sent to.
const (
	StateKey        = "stress"
	ClusterStateKey = "stress_cluster"
)

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "pressure-test traffic: recognise it, mark it ($stress, a header), route it to shadow clusters; marked traffic never reaches production, unmarked never a shadow",
		NewConfig:   newConfig,
		Factory:     registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		Needs:       api.Needs{Phase: api.BeforeRoute},
	})
	variables.Register(StateKey, stateVar(StateKey))
	variables.Register(ClusterStateKey, stateVar(ClusterStateKey))
}

func stateVar(key string) func(ctx api.Context) (string, bool) {
	return func(ctx api.Context) (string, bool) {
		if v, ok := ctx.GetState(key); ok {
			s, _ := v.(string)
			return s, s != ""
		}
		return "", false
	}
}

var (
	_ api.ReceiverFilter = (*filter)(nil)
	_ api.SenderFilter   = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
)
