package rewrite

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// filter is the compiled config itself: stateless, shared by every request.
type filter Config

// OnReceive rewrites the selected requests. BeforeRoute, a changed :path or
// :authority makes the framework clear the route cache so Envoy matches the
// route on the new request; AfterRoute the route stays.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if f.Match != nil && !f.Match.Matches(ctx, h) {
		f.notMatched.Inc(1)
		return api.Continue
	}
	orig := h.Path()
	path, query, hasQuery := strings.Cut(orig, "?")
	changed := false
	if f.Path != nil {
		if f.normalize {
			n, ok := normalizePath(path, f.Path.MergeSlashes)
			if !ok {
				f.invalidPath.Inc(1)
				return ctx.Reply(f.InvalidPathStatus, "invalid path: bad percent-encoding\n", f.refusalHeaders)
			}
			if n != path {
				f.normalized.Inc(1)
				path, changed = n, true
			}
		}
		if p, ok := (*Config)(f).rewritePath(path); ok && p != path {
			f.pathRewritten.Inc(1)
			path, changed = p, true
		}
	}
	if f.Query != nil {
		if nq := (*Config)(f).rewriteQuery(ctx, query); nq != query {
			f.queryRewritten.Inc(1)
			query, changed = nq, true
			hasQuery = nq != ""
		}
	}
	if changed {
		np := path
		if hasQuery {
			np = path + "?" + query
		}
		if f.origHeader != "" {
			_ = h.Set(f.origHeader, orig)
		}
		_ = h.SetPath(np)
	}
	hostChanged := false
	if f.Host != "" && h.Host() != f.Host {
		_ = h.SetHost(f.Host)
		f.hostRewritten.Inc(1)
		hostChanged = true
	}
	if changed || hostChanged {
		f.rewritten.Inc(1)
	}
	return api.Continue
}
