// Package extauth is the ext-auth plugin: it asks an HTTP authorization
// service about each request, like Envoy's ext_authz HTTP service, without
// blocking Envoy's worker thread; it relays denials, copies chosen headers
// upstream on success, may take the consumer from the service's answer,
// fails open or closed with a timeout, and can cache results.
//
// Files: config.go (Config, defaults, Validate, Needs), compiled.go (what
// Init builds: the HTTP client, replies, cache, metrics; Destroy), filter.go
// (the request path), check.go (one check request and its answer), cache.go
// (the result cache and its key).
package extauth

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "ext-auth"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "ask an HTTP authorization service (Envoy ext_authz style), async, with timeout, fail-open/closed and a result cache",
		NewConfig:   newConfig,
		Factory:     registry.Typed(func(c *Config) api.Filter { return c.filter }),
		// Config.Needs refines this per config (request body).
		Needs: api.Needs{Phase: api.AfterRoute, MayBlock: api.BlockReceive},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)

	_ api.Validator     = (*Config)(nil)
	_ api.Initializer   = (*Config)(nil)
	_ api.Destroyable   = (*Config)(nil)
	_ api.NeedsProvider = (*Config)(nil)
)
