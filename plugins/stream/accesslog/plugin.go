// Package accesslog is the access-log plugin: one line per request, rendered
// from a format of variables (text or JSON), written off Envoy's worker
// thread to stdout, stderr or a file rotated by size. A request only renders
// its line and queues it without waiting; a full queue drops the line and
// counts it; the queue is flushed when the config is destroyed.
//
// Files: config.go (Config, defaults, Validate), compiled.go (what Init
// builds: the JSON field order, the queue and its output; Destroy),
// filter.go (the log hook), vars.go (the variables it adds: $time_iso8601,
// $msec, $upstream_addr, $server_protocol, $response_code_details).
package accesslog

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "access-log"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "access log with a format of variables (text or JSON) to stdout or a size-rotated file, written off the worker thread",
		NewConfig:   newConfig,
		// The filter is the compiled config: stateless, no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// Only the log hook; it never blocks (it queues the line).
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

var (
	_ api.AccessLogger = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
	_ api.Destroyable = (*Config)(nil)
)
