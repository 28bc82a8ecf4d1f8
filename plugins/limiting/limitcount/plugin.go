// Package limitcount is the limit-count plugin: a request count per key and
// time window (fixed or sliding), shared by every Envoy instance through
// Redis, with X-RateLimit-* headers and a documented behaviour when Redis
// fails (fail_open, fail_closed or a local fallback).
//
// Files: config.go (Config, defaults, Validate), compiled.go (Init,
// Destroy), limiter.go (the counter store, fallback and metrics of a config
// version), scripts.go (the Redis scripts), local.go (the local fallback),
// key.go (Redis key layout), filter.go (the request and response path). The
// Redis client is plugins/internal/redisclient.
package limitcount

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "limit-count"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "cluster-wide request count limit per key and time window (fixed or sliding), counters in Redis",
		NewConfig:   newConfig,
		Factory:     registry.Typed(newFilter),
		// Every request asks Redis: OnReceive runs in a goroutine.
		Needs: api.Needs{Phase: api.AfterRoute, MayBlock: api.BlockReceive},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)
	_ api.SenderFilter   = (*filter)(nil)
	_ api.ReceiverFilter = (*bareFilter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
	_ api.Destroyable = (*Config)(nil)
)
