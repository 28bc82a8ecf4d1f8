// Package iprestriction is the ip-restriction plugin: allow and deny lists of
// CIDRs checked against the downstream address or a trusted X-Forwarded-For
// hop.
//
// Files: config.go (Config, defaults, Validate, which compiles the lists),
// compiled.go (what Validate and Init build: address sets, metrics, reply
// headers), filter.go (the request path), ipset.go (the compiled address
// sets), xff.go (which address is checked), metrics.go (the counters).
package iprestriction

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "ip-restriction"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "allow/deny CIDR lists on the client address (downstream or X-Forwarded-For hop)",
		NewConfig:   newConfig,
		// The filter is stateless: one value per config, no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// It changes nothing routing reads; AfterRoute like the auth plugins, so
		// it runs among them in chain order.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
)
