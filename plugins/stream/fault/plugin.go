// Package fault is the fault plugin: fault injection like Envoy's fault
// filter and APISIX's fault-injection. Matching requests (headers,
// variables, CEL, ... through shared/match) are delayed by a fixed time
// and/or answered with a configured status, each for a percentage of them.
// Delays wait in a goroutine, never on Envoy's worker thread.
//
// Files: config.go (Config, defaults, Validate, Needs), compiled.go (what
// Init builds: samplers, reply, metrics), filter.go (the request path).
package fault

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "fault"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "fault injection: fixed delays and aborts (status, body, headers) for a percentage of matching requests",
		NewConfig:   newConfig,
		// Stateless filter over the compiled config: no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// Config.Needs adds MayBlock when a delay is configured.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)

	_ api.Validator     = (*Config)(nil)
	_ api.Initializer   = (*Config)(nil)
	_ api.NeedsProvider = (*Config)(nil)
)
