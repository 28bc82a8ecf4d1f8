// Package rewrite is the rewrite plugin: path rewrite (prefix, or a regex with
// capture groups in Envoy's regex_rewrite form), host rewrite, query
// parameters added, set and removed, on the requests a match selects. The
// path is normalized first (percent-encoded unreserved characters decoded,
// dot segments removed, slashes optionally merged) so that a rewrite cannot
// be steered with "..", "%2e%2e" or an odd encoding. Configured BeforeRoute,
// the rewrite happens before routing and Envoy matches the route on the new
// path and host; AfterRoute (the default, like Envoy's prefix_rewrite and
// APISIX proxy-rewrite) the route was chosen on the original request.
package rewrite

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "rewrite"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "path (prefix, regex with capture groups), host and query rewrites, before or after routing; paths normalized (.., %2e, //) first",
		NewConfig:   newConfig,
		Factory:     registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		Needs:       api.Needs{Phase: api.AfterRoute},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)

	_ api.Validator     = (*Config)(nil)
	_ api.Initializer   = (*Config)(nil)
	_ api.NeedsProvider = (*Config)(nil)
)
