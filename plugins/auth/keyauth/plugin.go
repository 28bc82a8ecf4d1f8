// Package keyauth is the key-auth plugin: an API key taken from a header, a
// query parameter or a cookie identifies the consumer.
//
// Consumers come from the plugin's own `consumers:` list and from the chain's
// (the moe config's `consumers[].auth.key-auth`, see Credential).
//
// Files: config.go (Config, Credential, defaults, Validate, merge),
// compiled.go (Init: the key index of both consumer lists, sources, replies,
// metrics), index.go (the constant-time key index), filter.go (the request
// path: find the key, look it up, identify the consumer, hide the key).
package keyauth

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "key-auth"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "authenticate consumers by API key (header, query parameter or cookie)",
		NewConfig:   newConfig,
		// A chain-level consumer's `auth: {key-auth: {keys: [...]}}`.
		NewCredential: func() any { return &Credential{} },
		// The config itself is the (stateless, shared) filter: no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// Lookups and compares only: runs on Envoy's worker thread.
		Needs: api.Needs{Phase: api.AfterRoute},
		Merge: merge,
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
	_ api.Validator   = (*Credential)(nil)
)
