// Package directresponse is the direct-response plugin: matching requests
// are answered from config (status, headers, a body inline or from a file
// read when the config loads) without reaching the upstream: health checks,
// maintenance pages, mocks.
//
// Files: config.go (Config, Validate), compiled.go (what Init builds: the
// answers, body files read), filter.go (the request path).
package directresponse

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "direct-response"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "answers matching requests from config (status, headers, body inline or from a file read at load): health checks, maintenance pages, mocks",
		NewConfig:   newConfig,
		// Stateless filter over the prebuilt answers: no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		Needs:   api.Needs{Phase: api.AfterRoute},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
)
