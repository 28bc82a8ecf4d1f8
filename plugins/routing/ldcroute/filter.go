package ldcroute

import (
	"sync/atomic"
	"time"

	"github.com/moeproxy/moe/plugins/routing/internal/steer"
	"github.com/moeproxy/moe/shared/api"
)

// filter is the config seen as a filter: stateless, shared by all requests.
type filter Config

// OnReceive computes the request's unit and steers it there.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := (*Config)(f)
	home, t, o := c.resolve(ctx)
	switch o {
	case rejectInvalid:
		c.rejectedInvalid.Inc(1)
		return ctx.Reply(c.InvalidUIDStatus, "invalid user id\n", c.invalidReplyHeaders)
	case rejectAllDown:
		c.allDownRejected.Inc(1)
		return ctx.Reply(c.AllDownStatus, "unit "+c.units[home].Name+" and its fallbacks are down\n", c.allDownReplyHeaders)
	case routeFallback:
		c.fallback.Inc(1)
	case routeAllDownHome:
		c.allDownHome.Inc(1)
	}
	u := &c.units[t]
	changed := false
	if c.clusterHeader != "" {
		changed = steer.SetRouteHeader(h, c.clusterHeader, u.Cluster)
	}
	if c.unitHeader != "" {
		changed = steer.SetRouteHeader(h, c.unitHeader, u.Name) || changed
	}
	if changed {
		// Flushes the header writes and makes Envoy match the route again.
		_ = ctx.Receiver().ClearRouteCache()
	}
	ctx.SetState(StateUnit, u.nameState)
	u.routed.Inc(1)
	return api.Continue
}

// Append names the unit on the response and counts Envoy's "no such
// cluster" answers.
func (f *filter) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := (*Config)(f)
	if steer.ClusterNotFound(ctx, h) {
		c.clusterNF.Inc(1)
		if logAllowed(&c.lastWarn) {
			name, _ := ctx.GetState(StateUnit)
			ctx.Log().Warnf("Envoy has no cluster for unit %v (cluster_header %s): answered 503; add the cluster or fix units[].cluster", name, c.ClusterHeader)
		}
	}
	if c.responseHeader != "" {
		if v, ok := ctx.GetState(StateUnit); ok {
			if s, ok := v.(string); ok && s != "" {
				_ = h.Set(c.responseHeader, s)
			}
		}
	}
	return api.Continue
}

// logAllowed lets one warning a second through.
func logAllowed(last *atomic.Int64) bool {
	now := time.Now().Unix()
	prev := last.Load()
	return now != prev && last.CompareAndSwap(prev, now)
}
