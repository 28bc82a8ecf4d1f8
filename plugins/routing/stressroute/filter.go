package stressroute

import (
	"github.com/moeproxy/moe/plugins/routing/internal/target"
	"github.com/moeproxy/moe/shared/api"
)

// filter is the compiled config itself: stateless, shared by every request.
type filter Config

// OnReceive runs BeforeRoute, after traffic-route when both are configured
// (list stress-route after it): traffic-route has then written the target
// cluster to the cluster header.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if !f.Match.Matches(ctx, h) {
		return f.unmarkedRequest(ctx, h)
	}
	f.marked.Inc(1)
	// Marked before anything can refuse it, so the refusal's log and a
	// later golang filter see it as test traffic too.
	_ = h.Set(f.markHeader, f.MarkValue)
	ctx.SetState(StateKey, f.markState)
	// The target: the cluster an earlier plugin (traffic-route) or the client
	// put in the cluster header, else the cluster of the route matched on the
	// request as it came (the route cache is cleared only after the
	// BeforeRoute plugins).
	t, ok := h.Get(f.clusterHeader)
	if !ok || t == "" {
		t = ctx.Receiver().Route().ClusterName()
	}
	if t == "" {
		f.noTarget.Inc(1)
		return ctx.Reply(f.MissingStatus, "no target cluster for pressure-test traffic\n", f.refusalHeaders)
	}
	shadow := (*Config)(f).shadowFor(t)
	if shadow == "" {
		f.noShadow.Inc(1)
		return ctx.Reply(f.MissingStatus, "no shadow cluster for pressure-test traffic\n", f.refusalHeaders)
	}
	_ = h.Set(f.clusterHeader, shadow)
	ctx.SetState(ClusterStateKey, shadow)
	if c := f.mapCounters[shadow]; c != nil {
		c.Inc(1)
	}
	return api.Continue
}

// unmarkedRequest keeps ordinary traffic away from shadow clusters and the
// mark away from ordinary traffic.
func (f *filter) unmarkedRequest(ctx api.Context, h api.RequestHeaderMap) api.Status {
	f.unmarked.Inc(1)
	if len(h.Values(f.markHeader)) > 0 {
		_ = h.Del(f.markHeader)
		f.markRemoved.Inc(1)
	}
	vs := h.Values(f.clusterHeader)
	if len(vs) == 0 {
		// No cluster header: the route matched as the request came is the
		// route it takes (nothing here changes what routing reads, unless
		// the mark was removed and the route table keys on it). A route to a
		// shadow cluster is refused.
		if (*Config)(f).isShadow(ctx.Receiver().Route().ClusterName()) {
			f.unmarkedRefused.Inc(1)
			return ctx.Reply(f.UnmarkedStatus, "shadow clusters take pressure-test traffic only\n", f.refusalHeaders)
		}
		return api.Continue
	}
	for _, v := range vs {
		if (*Config)(f).isShadow(v) {
			// Removed as a whole (every value): the route table reads the
			// first one, and no value of it was set for this request.
			_ = h.Del(f.clusterHeader)
			f.shadowHeaderRemoved.Inc(1)
			break
		}
	}
	return api.Continue
}

// Append gives a marked request whose shadow cluster Envoy does not have
// (the router's cluster_not_found answer: the request reached no upstream)
// the configured missing_status, and counts it.
func (f *filter) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	status := h.Status()
	if status != 503 && status != 404 && status != 500 {
		return api.Continue
	}
	if _, marked := ctx.GetState(StateKey); !marked || !target.ClusterNotFound(ctx, status) {
		return api.Continue
	}
	f.shadowMissing.Inc(1)
	if status != f.MissingStatus {
		_ = h.SetStatus(f.MissingStatus)
	}
	return api.Continue
}
