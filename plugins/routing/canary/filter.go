package canary

import (
	"sync/atomic"
	"time"

	"github.com/moeproxy/moe/plugins/routing/internal/steer"
	"github.com/moeproxy/moe/shared/api"
)

// filter is the config seen as a filter: stateless, shared by all requests.
type filter Config

// OnReceive chooses the target and steers the request to it.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := (*Config)(f)
	t, why, hash := c.decide(ctx, h)
	changed := false
	if c.clusterHeader != "" {
		changed = steer.SetRouteHeader(h, c.clusterHeader, t.Cluster)
	}
	if c.targetHeader != "" {
		changed = steer.SetRouteHeader(h, c.targetHeader, t.Name) || changed
	}
	if changed {
		// Flushes the header writes and makes Envoy match the route again,
		// so the route's cluster_header (or header match) sees the target.
		_ = ctx.Receiver().ClearRouteCache()
	}
	if len(t.Hosts) > 0 {
		_ = ctx.Receiver().SetUpstreamOverrideHost(t.host(hash), t.Strict)
	}
	ctx.SetState(StateTarget, t.nameState)
	if c.sends {
		ctx.SetState(stateDecision, &t.decisions[why])
	}
	t.routed.Inc(1)
	c.reasons[why].Inc(1)
	return api.Continue
}

// Append counts Envoy's "no such cluster" answers, names the target on the
// response and sets the sticky cookie.
func (f *filter) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := (*Config)(f)
	if steer.ClusterNotFound(ctx, h) {
		c.clusterNF.Inc(1)
		if logAllowed(&c.lastWarn) {
			name, _ := ctx.GetState(StateTarget)
			ctx.Log().Warnf("Envoy has no cluster for target %v (cluster_header %s): answered 503; add the cluster or fix targets[].cluster", name, c.ClusterHeader)
		}
	}
	if !c.sends {
		return api.Continue
	}
	v, _ := ctx.GetState(stateDecision)
	d, ok := v.(*decision)
	if !ok {
		return api.Continue // replied before this plugin chose
	}
	if c.responseHeader != "" {
		_ = h.Set(c.responseHeader, d.t.Name)
	}
	if c.stickyCookie != "" && d.why != byOverride && d.why != byCookie {
		_ = h.Add("set-cookie", d.t.setCookie)
	}
	return api.Continue
}

// logAllowed lets one warning a second through.
func logAllowed(last *atomic.Int64) bool {
	now := time.Now().Unix()
	prev := last.Load()
	return now != prev && last.CompareAndSwap(prev, now)
}
