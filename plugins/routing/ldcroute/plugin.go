// Package ldcroute is the ldc-route plugin: unit (LDC zone) routing as the
// MOSN team's LDC gateways do it. The user id becomes a slot (uid % slots, or
// a hash), the slot table names the unit, the request goes to the unit's
// cluster; a unit marked down (in config or through the plugin's admin API)
// hands its requests to its fallbacks in order.
//
// Files: config.go (Config, defaults, Validate), compiled.go (what Init
// builds: slot table, units, the down/fallback snapshot, metrics; Destroy),
// slot.go (user id -> slot -> unit), filter.go (the request and response
// paths), admin.go (the admin HTTP API shared by the configs on one address).
package ldcroute

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/variables"
)

// Name is the registered plugin name.
const Name = "ldc-route"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "LDC unit routing: user id -> slot -> unit cluster, fallback order for units marked down (config or admin API), unit exposed as $ldc_unit and a header",
		NewConfig:   newConfig,
		Factory:     registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// AfterRoute, so the user id may be $consumer (after the auth
		// plugins); the plugin clears the route cache itself when it changed
		// a header the route reads. Pure CPU on the request path.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
	// $ldc_unit: the unit the request was sent to.
	variables.Register("ldc_unit", func(ctx api.Context) (string, bool) {
		v, ok := ctx.GetState(StateUnit)
		s, _ := v.(string)
		return s, ok && s != ""
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)
	_ api.SenderFilter   = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
	_ api.Destroyable = (*Config)(nil)
)
