// Package cors answers CORS preflights and adds CORS response headers as the
// Fetch standard (https://fetch.spec.whatwg.org/#http-cors-protocol)
// describes them, like Envoy's cors filter, APISIX/Kong "cors" and HTNN's cors:
// allowed origins (exact, "*", wildcard subdomains, regular expressions),
// methods, request headers, credentials, exposed headers and max-age.
//
// A preflight (OPTIONS with Origin and Access-Control-Request-Method) is
// answered by the gateway and never reaches the upstream. A request from an
// origin that is not allowed gets no CORS headers at all: the plugin removes
// any the upstream set. Responses that depend on the Origin carry
// Vary: Origin, so caches keep them apart.
package cors

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "cors"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "CORS per the Fetch standard: answers preflights, adds Access-Control-* headers for allowed origins, none for others",
		NewConfig:   newConfig,
		// Stateless: the filter is the compiled config.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// AfterRoute: the config is per route. Pure CPU (map lookups, a
		// regex at most): both hooks run on Envoy's worker thread.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)
	_ api.SenderFilter   = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
)
