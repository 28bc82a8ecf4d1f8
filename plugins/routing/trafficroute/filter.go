package trafficroute

import (
	"github.com/moeproxy/moe/plugins/routing/internal/target"
	"github.com/moeproxy/moe/shared/api"
)

// filter is the compiled config itself: stateless, shared by every request.
type filter Config

// OnReceive picks the target of the first matching rule (or the default) and
// applies it. It runs BeforeRoute: when it changed a header, the framework
// writes the headers to Envoy and clears the route cache, so the route table
// matches again and a `cluster_header` route reads the cluster.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	// The cluster header is the plugin's: whatever the client sent is dropped
	// (all values), so a client never picks a cluster by sending it (Envoy
	// documents cluster_header as implicitly untrusted).
	if len(h.Values(f.clusterHeader)) > 0 {
		_ = h.Del(f.clusterHeader)
		f.clientHeaderRemoved.Inc(1)
	}
	t := f.def
	for i := range f.rules {
		if f.rules[i].match.Matches(ctx, h) {
			t = f.rules[i].t
			break
		}
	}
	if t == nil {
		f.noTarget.Inc(1)
		return api.Continue
	}
	for _, name := range t.remove {
		_ = h.Del(name)
	}
	for i := range t.set {
		_ = h.Set(t.set[i].name, t.set[i].value.Render(ctx))
	}
	if t.cluster != "" {
		_ = h.Set(f.clusterHeader, t.cluster)
	}
	t.chosen.Inc(1)
	ctx.SetState(StateKey, t.state)
	return api.Continue
}

// Append counts requests whose cluster target Envoy did not find: the router
// answered them itself (503, or the route's cluster_not_found_response_code)
// and they reached no upstream. The answer is left as Envoy made it.
func (f *filter) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	status := h.Status()
	if status != 503 && status != 404 && status != 500 {
		return api.Continue
	}
	v, ok := ctx.GetState(StateKey)
	if !ok {
		return api.Continue
	}
	name, _ := v.(string)
	if cluster := f.clusterOf[name]; cluster != "" && target.ClusterNotFound(ctx, status) {
		f.targetMissing.Inc(1)
		ctx.Log().Warnf("target %s: cluster not found in the route table's clusters (answered %d)", target.Describe(name, cluster), status)
	}
	return api.Continue
}
