// Package basicauth is the basic-auth plugin (RFC 7617): user name and
// password from the Authorization header, checked against consumers defined in
// config with clear-text, bcrypt or argon2id passwords.
//
// Consumers come from the plugin's own `consumers:` list and from the chain's
// (the moe config's `consumers[].auth.basic-auth`, see Credential).
//
// Files: config.go (Config, Credential, defaults, Validate, Needs, merge),
// compiled.go (Init: the user table of both consumer lists, replies,
// metrics), users.go (the user table, the verified cache, the hash slots),
// hash.go (bcrypt and argon2id), normalize.go (NFC), filter.go (the request
// path).
package basicauth

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "basic-auth"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "authenticate consumers with HTTP Basic credentials (RFC 7617)",
		NewConfig:   newConfig,
		// A chain-level consumer's `auth: {basic-auth: {password_hash: ...}}`.
		NewCredential: func() any { return &Credential{} },
		// The config is the shared stateless filter: no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// Config.Needs adds MayBlock when passwords are hashed.
		Needs: api.Needs{Phase: api.AfterRoute},
		Merge: merge,
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)

	_ api.Validator     = (*Config)(nil)
	_ api.Initializer   = (*Config)(nil)
	_ api.NeedsProvider = (*Config)(nil)
	_ api.Validator     = (*Credential)(nil)
)
