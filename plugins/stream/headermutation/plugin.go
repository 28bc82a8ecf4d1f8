// Package headermutation is the header-mutation plugin: request and
// response headers set, added, appended or removed, with values built from
// variables ($consumer, $route_name, $arg_x, ...) and each mutation
// optionally conditional on a CEL expression. Control characters in a built
// value (CR, LF, NUL) are replaced, so they never reach the wire.
//
// Files: config.go (Config, defaults, Validate, Needs), compiled.go (what
// Init builds), filter.go (the request and response paths).
package headermutation

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "header-mutation"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "request and response headers set, added, appended or removed, values from variable templates, optionally conditional on CEL",
		NewConfig:   newConfig,
		Factory:     registry.Typed(newFilter),
		// Config.Needs: before_route or after_route, as configured.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

var (
	_ api.ReceiverFilter = (*reqFilter)(nil)
	_ api.SenderFilter   = (*respFilter)(nil)
	_ api.ReceiverFilter = (*bothFilter)(nil)
	_ api.SenderFilter   = (*bothFilter)(nil)

	_ api.Validator     = (*Config)(nil)
	_ api.Initializer   = (*Config)(nil)
	_ api.NeedsProvider = (*Config)(nil)
)
