// Package jwtauth is the jwt-auth plugin: it authenticates requests with a
// JSON Web Token (JWS compact, HS/RS/PS/ES/EdDSA) verified against inline keys
// or a JWKS (file or URL, refreshed in the background), checks exp/nbf/iat,
// iss and aud, maps a claim to a consumer (from its own consumer list or the
// chain's, `consumers[].auth.jwt-auth: {claim_value: ...}`) and forwards
// chosen claims.
//
// Files: config.go (Config, Credential, defaults, Validate, merge),
// compiled.go (what Init builds: keys, consumer index, replies, metrics;
// Destroy), filter.go (the request path), verify.go (token decoding and
// checks), algs.go, keys.go (inline keys), jwks.go (the JWKS source and its
// refresher).
package jwtauth

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "jwt-auth"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "authenticate with a JWT (HS/RS/PS/ES/EdDSA; inline keys or JWKS file/URL)",
		NewConfig:   newConfig,
		// Verification is CPU only and keys come from an atomic snapshot: it runs
		// on the worker thread, no MayBlock.
		Factory: registry.Typed(func(c *Config) api.Filter { return c.filter }),
		Needs:   api.Needs{Phase: api.AfterRoute},
		Merge:   merge,
		// A chain-level consumer's `auth.jwt-auth`: the value of consumer_claim
		// that means this consumer.
		NewCredential: func() any { return &Credential{} },
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
	_ api.Destroyable = (*Config)(nil)
)
