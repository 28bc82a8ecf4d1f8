// Package limitreq is the limit-req plugin: a local token bucket per key
// (client address, consumer, header, ...) with burst, optional delay and a
// bounded key cache.
//
// Files: config.go (Config, defaults, Validate, Needs), compiled.go (what
// Init builds: buckets, metrics, reply headers; Destroy), cache.go (the
// bounded bucket cache), limit.go (one request's decision, Retry-After),
// filter.go (the request path).
package limitreq

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "limit-req"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "local token-bucket request rate limit per key (e.g. $remote_addr, $consumer), with burst and optional delay",
		NewConfig:   newConfig,
		// Stateless filter over the config's shared buckets: no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// Config.Needs adds MayBlock when max_delay is set.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)

	_ api.Validator     = (*Config)(nil)
	_ api.Initializer   = (*Config)(nil)
	_ api.Destroyable   = (*Config)(nil)
	_ api.NeedsProvider = (*Config)(nil)
)
