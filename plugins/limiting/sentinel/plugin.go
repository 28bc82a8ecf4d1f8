// Package sentinel is the sentinel plugin: flow (QPS), concurrency,
// circuit breaker, hot-spot (per value) and adaptive system protection per
// request, with alibaba/sentinel-golang doing the limiting. A request's
// sentinel resource is rendered from a template; blocked requests are
// answered locally; admitted ones exit their entry with the response status
// and time, so the breakers learn from real traffic.
//
// Files: config.go (Config, defaults, Validate), rule_*.go (one rule kind
// each: config type, validation, translation to sentinel's rule), rules.go
// (rule selection per resource), compiled.go (Init, Destroy), manager.go
// (the process-wide rule manager), setup.go (sentinel's process setup,
// logging, breaker metrics), filter.go (the request path).
package sentinel

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

func init() {
	registry.Register(registry.Plugin{
		Name:        "sentinel",
		Description: "flow, concurrency, circuit breaker, hot-spot and system protection with alibaba/sentinel-golang",
		NewConfig:   newConfig,
		// Per request: the filter holds the request's sentinel entry.
		Factory: registry.Typed(func(c *Config) api.Filter { return &filter{rt: c.rt} }),
		// Config.Needs adds MayBlock for the request phase with throttling rules.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)
	_ api.SenderFilter   = (*filter)(nil)
	_ api.Destroyer      = (*filter)(nil)

	_ api.Validator     = (*Config)(nil)
	_ api.Initializer   = (*Config)(nil)
	_ api.Destroyable   = (*Config)(nil)
	_ api.NeedsProvider = (*Config)(nil)
)
