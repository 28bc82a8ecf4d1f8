// Package extauth is the ext-auth plugin: it asks an HTTP authorization
// service about each request, like Envoy's ext_authz HTTP service, without
// blocking Envoy's worker thread; it relays denials, copies chosen headers
// upstream on success, fails open or closed with a timeout, and can cache
// results.
package extauth

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

func init() {
	registry.Register(registry.Plugin{
		Name:        "ext-auth",
		Description: "ask an HTTP authorization service (Envoy ext_authz style), async, with timeout, fail-open/closed and a result cache",
		NewConfig:   NewConfig,
		Factory:     registry.Typed(func(c *Config) api.Filter { return c.filter }),
		// Config.Needs refines this per config (request body).
		Needs: api.Needs{Phase: api.AfterRoute, MayBlock: api.BlockReceive},
	})
}
