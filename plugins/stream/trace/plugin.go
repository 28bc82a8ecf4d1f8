// Package trace is the trace plugin: W3C Trace Context propagation
// (traceparent/tracestate: continue a valid trace, start one when missing,
// replace a malformed one), sampling by ratio and by the parent's flag, a
// request id header (kept or generated), $trace_id and $span_id, and spans
// exported with the OpenTelemetry Go SDK over OTLP/HTTP — batched, from a
// bounded queue, with a timeout, off Envoy's worker thread, so a collector
// that is down costs requests nothing. Optionally one child span per plugin
// call, from the framework's call timings.
//
// Files: config.go (Config, defaults, Validate), compiled.go (what Init
// builds; Destroy), traceparent.go (the header, ids, ratio sampling),
// filter.go (the request: OnReceive, Append, Log), export.go (the exporter
// pipeline over the SDK), vars.go ($trace_id, $span_id).
package trace

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "trace"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "W3C traceparent propagation, sampling, request ids, spans exported over OTLP/HTTP with the OpenTelemetry SDK, async",
		NewConfig:   newConfig,
		// One filter per request: it holds the request's trace ids.
		Factory: registry.Typed(func(c *Config) api.Filter { return &filter{c: c} }),
		// Header work only; the export runs on the exporter's goroutine.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)
	_ api.SenderFilter   = (*filter)(nil)
	_ api.AccessLogger   = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
	_ api.Destroyable = (*Config)(nil)
)
