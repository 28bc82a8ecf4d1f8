// Package canary is the canary plugin: a weighted split of traffic between
// clusters or versions, sticky per user by consistent (weighted rendezvous)
// hashing, with tester overrides and an optional pinning cookie.
//
// Files: config.go (Config, defaults, Validate), compiled.go (what Init
// builds: targets, cookies, metrics), pick.go (the decision), filter.go (the
// request and response paths).
package canary

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/variables"
)

// Name is the registered plugin name.
const Name = "canary"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "weighted canary split between clusters, versions or hosts, sticky per user by consistent hashing, with tester overrides and a pinning cookie",
		NewConfig:   newConfig,
		Factory:     registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// AfterRoute, so keys may use $consumer (after the auth plugins); the
		// plugin clears the route cache itself when it changed a header the
		// route reads. Pure CPU: never blocks.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
	// $canary_target: the target this request went to.
	variables.Register("canary_target", func(ctx api.Context) (string, bool) {
		v, ok := ctx.GetState(StateTarget)
		s, _ := v.(string)
		return s, ok && s != ""
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)
	_ api.SenderFilter   = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
)
