// Package template is the in-tree template plugin: copy this directory to
// start a new plugin. It is small but complete, and follows every convention
// of plugins/README.md: registration and interface assertions here, the typed
// config with defaults and validation in config.go, what Init builds in
// compiled.go, the per-request code in filter.go, and tests of each kind
// (unit, fake-Envoy chain, end to end through moe-host, benchmark).
//
// What it does: requests without a required header are refused with a
// configured status and body; every response gets a header rendered from a
// variable template (for example the route name). Rename it, replace the
// behaviour, keep the shape.
package template

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name: the "name" in a moe plugin list and the
// plugin_name of its own golang filter.
const Name = "template"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "the template plugin to copy: refuses requests without a required header, stamps a response header from a variable template",
		NewConfig:   newConfig,
		// The filter is the compiled config itself: stateless, shared by every
		// request, so creating it costs no allocation.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// AfterRoute: $route_name in the stamp needs the route. Nothing here
		// blocks (no I/O), so both phases run on Envoy's worker thread.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

// The interfaces the filter and config implement. A hook with a wrong
// signature would otherwise compile and silently never run.
var (
	_ api.ReceiverFilter = (*filter)(nil)
	_ api.SenderFilter   = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
)
