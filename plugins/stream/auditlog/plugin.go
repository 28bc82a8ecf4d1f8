// Package auditlog is the audit-log plugin: one structured JSON record per
// request for compliance — who (consumer, source IP), what (method, host,
// path, route, cluster), the decision (which plugin allowed or denied the
// request and why, from the framework's decisions: local replies and
// identified consumers are recorded automatically, plugins add theirs with
// ctx.Decide), the status and the latency. Credentials never reach a record:
// credential headers and configured headers are masked, and so are
// credential query parameters in the path. Records go to a file (or stdout)
// or to an HTTP collector, asynchronously: a bounded queue, a timeout, drops
// counted; a collector that is down costs requests nothing.
//
// Files: config.go (Config, defaults, Validate), compiled.go (what Init
// builds: masks, the sink and its queue; Destroy), filter.go (the log hook),
// record.go (the record's JSON), sink.go (the HTTP sink).
package auditlog

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "audit-log"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "one JSON audit record per request (who, what, which plugin decided and why, status, latency), masked, to a file or an HTTP collector, async",
		NewConfig:   newConfig,
		Factory:     registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// Observe: the framework keeps the request's decisions for this chain.
		// The log hook only renders and queues: nothing blocks.
		Needs: api.Needs{Phase: api.AfterRoute, Observe: true},
	})
}

var (
	_ api.AccessLogger = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
	_ api.Destroyable = (*Config)(nil)
)
