// Package trafficroute is the traffic-route plugin: content-based routing.
// Ordered rules match requests on any mix of path, method, headers, query
// parameters, cookies, variables or a CEL expression (shared/match); the first
// rule that matches picks a target, else the default target does. A target is
// a cluster, written to the request header the route's `cluster_header` reads,
// and/or header changes after which Envoy matches the route again (the
// framework clears the route cache after the BeforeRoute plugins). The chosen
// target's name is the variable $traffic_target for later plugins, later
// golang filters and Envoy's access log.
package trafficroute

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/variables"
)

// Name is the registered plugin name.
const Name = "traffic-route"

// StateKey is the per-request state key (and filter state moe.state.<key>)
// holding the chosen target's name.
const StateKey = "traffic_target"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "content-based routing: ordered rules (path, method, headers, query, cookies, variables, CEL) pick a cluster for the route's cluster_header or header changes and a route re-match",
		NewConfig:   newConfig,
		Factory:     registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// BeforeRoute: the plugin changes what the route table reads; the
		// framework flushes the headers and clears the route cache after the
		// BeforeRoute group, so Envoy matches the route again.
		Needs: api.Needs{Phase: api.BeforeRoute},
	})
	variables.Register(StateKey, func(ctx api.Context) (string, bool) {
		if v, ok := ctx.GetState(StateKey); ok {
			s, _ := v.(string)
			return s, s != ""
		}
		return "", false
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)
	_ api.SenderFilter   = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
)
