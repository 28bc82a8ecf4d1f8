// Package hmacauth is the hmac-auth plugin: requests signed with a shared
// secret (HMAC-SHA256/512) over the request target, selected headers and a
// date, with a clock-skew window, replay protection by nonce (kept in this
// process or, shared by every instance, in Redis) and an optional body
// digest. The signing string format is documented in README.md.
//
// Consumers come from the plugin's own `consumers:` list and from the chain's
// (the moe config's `consumers[].auth.hmac-auth`, see Credential).
//
// Files: config.go (Config, Credential, defaults, Validate, Needs, merge),
// compiled.go (Init, Destroy: keys of both consumer lists, replies, nonce
// store), keys.go (signing keys and pooled HMAC states), filter.go (the
// request path), signing.go (the signed headers list and the signing string),
// authorization.go (the Authorization header), digest.go (body digests),
// nonce.go (the in-process nonce store), nonce_redis.go (the Redis nonce
// store and its failure policy).
package hmacauth

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "hmac-auth"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "authenticate consumers by HMAC-signed requests with replay protection (nonces in memory or in Redis)",
		NewConfig:   newConfig,
		// A chain-level consumer's `auth: {hmac-auth: {keys: [{key_id, secret}]}}`.
		NewCredential: func() any { return &Credential{} },
		// The config is the shared stateless filter: no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// Config.Needs adds WholeBody with validate_request_body and MayBlock
		// for the request phase with the Redis nonce store.
		Needs: api.Needs{Phase: api.AfterRoute},
		Merge: merge,
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)

	_ api.Validator     = (*Config)(nil)
	_ api.Initializer   = (*Config)(nil)
	_ api.Destroyable   = (*Config)(nil)
	_ api.NeedsProvider = (*Config)(nil)
	_ api.Validator     = (*Credential)(nil)

	_ nonceChecker = (*nonceStore)(nil)
	_ nonceChecker = (*redisNonces)(nil)
)
