// Package jwtauth is the jwt-auth plugin: it authenticates requests with a
// JSON Web Token (JWS compact, HS/RS/PS/ES/EdDSA) verified against inline keys
// or a JWKS (file or URL, refreshed in the background), checks exp/nbf/iat,
// iss and aud, maps a claim to a consumer and forwards chosen claims.
package jwtauth

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

func init() {
	registry.Register(registry.Plugin{
		Name:        "jwt-auth",
		Description: "authenticate with a JWT (HS/RS/PS/ES/EdDSA; inline keys or JWKS file/URL)",
		NewConfig:   NewConfig,
		// Verification is CPU only and keys come from an atomic snapshot: it runs
		// on the worker thread, no MayBlock.
		Factory: registry.Typed(func(c *Config) api.Filter { return c.filter }),
		Needs:   api.Needs{Phase: api.AfterRoute},
		Merge:   merge,
	})
}
