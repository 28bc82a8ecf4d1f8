// Package mirror is the mirror plugin: copies selected requests (match and
// percentage per target) to other upstreams from a bounded worker pool. The
// original request never waits for a copy and never fails because of one:
// copies are queued, a full queue drops them (counted), and the workers run
// outside every request. Bodies are copied up to max_body as they stream
// through.
//
// Files: config.go (Config, defaults, Validate, Needs), compiled.go (Init:
// targets, metrics, HTTP client, pool; Destroy), pool.go (the workers and
// the mirror request), filter.go (the request path).
package mirror

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "mirror"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "copies selected requests (match, percentage) to other upstreams from a bounded worker pool; the original never waits",
		NewConfig:   newConfig,
		// One filter per request: it holds the chosen targets and the body copy.
		Factory: registry.Typed(func(c *Config) api.Filter { return &filter{c: c} }),
		// Config.Needs streams the request body when bodies are mirrored.
		Needs: api.Needs{Phase: api.AfterRoute, RequestBody: api.StreamingBody},
	})
}

var (
	_ api.ReceiverFilter    = (*filter)(nil)
	_ api.StreamingReceiver = (*filter)(nil)

	_ api.Validator     = (*Config)(nil)
	_ api.Initializer   = (*Config)(nil)
	_ api.Destroyable   = (*Config)(nil)
	_ api.NeedsProvider = (*Config)(nil)
)
