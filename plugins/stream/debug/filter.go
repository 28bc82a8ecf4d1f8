package debug

import (
	"sync/atomic"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/secret"
)

// filter is per request (one small allocation): it remembers whether the
// request asked for a trace with the secret. (Request state would do too, but
// looking up a key no plugin set reads Envoy's filter state, a cgo call per
// request.) traced is atomic because Append may run on another goroutine
// than OnReceive.
type filter struct {
	*Config
	traced atomic.Bool
}

// OnReceive checks the debug header and turns call tracing on for the
// request when it asked with the secret, or for every request when the
// slow-request log is on.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	debug := false
	if f.enabled {
		if vs := h.Values(f.header); len(vs) > 0 {
			debug = len(vs) == 1 && f.secretMatches(vs[0])
			// The secret does not travel further upstream.
			_ = h.Del(f.header)
			if debug {
				f.tracedCount.Inc(1)
				f.traced.Store(true)
			} else {
				f.badSecret.Inc(1)
				ctx.Log().Debugf("%s header without the right secret: no trace", f.header) // never the value
			}
		}
	}
	if debug || f.slow > 0 {
		ctx.TraceCalls()
	}
	return api.Continue
}

// secretMatches compares digests in constant time: neither the length nor
// the content of a guess changes how long it takes.
func (f *filter) secretMatches(v string) bool {
	sum := secret.DigestOf(v)
	return secret.EqualDigest(&sum, &f.secretSum)
}

// Append writes the trace of a debug request into the response header. Every
// other plugin's Append ran already (this plugin is first in the chain, so
// last on the way back).
func (f *filter) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if f.traced.Load() {
		_ = h.Set(f.responseHeader, formatTrace(ctx.PluginName(), ctx.Calls(), ctx.Decisions()))
	}
	return api.Continue
}

// slowFilter is the filter of a config with slow_threshold: the same hooks
// plus the log hook. A config without it uses filter, so its requests do not
// pay for a log hook (the framework skips phases no plugin implements).
type slowFilter struct{ filter }

// Log writes the slow-request line.
func (f *slowFilter) Log(ctx api.Context, req api.RequestHeaderMap, _ api.ResponseHeaderMap, info api.RequestInfo) {
	if f.slow <= 0 || info == nil {
		return
	}
	d := info.Duration()
	if d < f.slow {
		return
	}
	f.slowRequests.Inc(1)
	method, path := "-", "-"
	if req != nil {
		// The path the client sent: a route's rewrite keeps it in
		// x-envoy-original-path.
		p, ok := req.Get("x-envoy-original-path")
		if !ok {
			p = req.Path()
		}
		method, path = safe(req.Method(), 16), safe(withoutQuery(p), 256)
	}
	ctx.Log().Warnf("slow request: %s %s took %s (slow_threshold %s), status %d; plugins: %s",
		method, path, d.Round(time.Microsecond), f.slow, info.ResponseCode(), formatTrace(ctx.PluginName(), ctx.Calls(), ctx.Decisions()))
}
