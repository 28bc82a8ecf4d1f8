// Package consumerrestriction is the consumer-restriction plugin: RBAC on the
// consumer an earlier auth plugin identified (of this chain, or of an earlier
// golang filter: the consumer travels in Envoy's filter state), by name or
// group, optionally per method and path.
//
// Files: config.go (Config, Rule, defaults, Validate, which compiles the
// rules), compiled.go (what Validate and Init build: rules, replies,
// counters), rules.go (compiled rules and how they match), path.go (the
// request path as rules see it), filter.go (the request path).
package consumerrestriction

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "consumer-restriction"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "allow/deny consumers by name or group, optionally per method and path (run after an auth plugin)",
		NewConfig:   newConfig,
		// Stateless: one filter per config, no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// AfterRoute like the auth plugins, so it runs after them in chain order.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
)
