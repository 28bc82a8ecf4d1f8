// Package debug is the debug plugin (HTNN's debugMode): on a route where it
// is configured, a request that carries the debug header with the configured
// secret gets a response header listing every plugin that ran, its decision
// and the time of each of its hooks; and requests slower than a threshold
// are logged with the same list.
//
// It uses the framework's per-request call tracing (ctx.TraceCalls/Calls)
// and the plugins' decisions (ctx.Decisions, kept because the plugin declares
// Needs.Observe). It runs BeforeRoute so that, placed first in the chain, it
// turns tracing on before any other plugin runs.
package debug

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "debug"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "per-request plugin trace (plugins run, decisions, time per hook) in a response header for requests with a secret debug header; slow-request log",
		NewConfig:   newConfig,
		// One small filter per request; with a slow threshold, the type
		// with the log hook.
		Factory: registry.Typed(func(c *Config) api.Filter {
			if c.slow > 0 {
				return &slowFilter{filter{Config: c}}
			}
			return &filter{Config: c}
		}),
		// BeforeRoute: first of the chain, so tracing covers every other
		// plugin. Observe: the framework keeps the request's decisions. All
		// of it is CPU work on Envoy's worker thread (no MayBlock).
		Needs: api.Needs{Phase: api.BeforeRoute, Observe: true},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)
	_ api.SenderFilter   = (*filter)(nil)
	_ api.ReceiverFilter = (*slowFilter)(nil)
	_ api.SenderFilter   = (*slowFilter)(nil)
	_ api.AccessLogger   = (*slowFilter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
)
