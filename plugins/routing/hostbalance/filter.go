package hostbalance

import (
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/moeproxy/moe/shared/api"
)

// stateKey holds the picked *host for $host_balance_host (not a string, so it
// stays in Go: no filter-state write per request).
const stateKey = "host-balance.host"

// filter is one request: the host it was pinned to, when, and whether its
// response was fed back yet.
type filter struct {
	c     *Config
	h     *host
	start int64
	fed   bool
}

// OnReceive picks a host and pins it with SetUpstreamOverrideHost. No host
// (none resolved, all ejected, another cluster) leaves the request to Envoy's
// own load balancing.
func (f *filter) OnReceive(ctx api.Context, hdr api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := f.c
	if c.Cluster != "" && ctx.Receiver().Route().ClusterName() != c.Cluster {
		c.skippedCluster.Inc(1)
		return api.Continue
	}
	var key uint64
	hasKey := false
	if c.Hash.Key != nil && c.bal.opts.strategy >= kRing && c.bal.opts.strategy <= kMaglev {
		var buf [256]byte
		b := c.Hash.Key.AppendTo(buf[:0], ctx)
		if len(b) > 0 {
			key, hasKey = xxhash.Sum64(b), true
		} else {
			c.hashKeyEmpty.Inc(1)
		}
	}
	now := monoNow()
	h, res := c.bal.pick(now, key, hasKey)
	switch res {
	case noHosts:
		c.fallbackNoHosts.Inc(1)
		return api.Continue
	case allEjected:
		c.fallbackEjected.Inc(1)
		return api.Continue
	}
	if err := ctx.Receiver().SetUpstreamOverrideHost(h.addr, c.Strict); err != nil {
		c.bal.release(h)
		c.overrideFailed.Inc(1)
		ctx.Log().Debugf("SetUpstreamOverrideHost(%s): %v", h.addr, err)
		return api.Continue
	}
	h.picked.Inc(1)
	f.h, f.start = h, now
	ctx.SetState(stateKey, h)
	return api.Continue
}

// Append feeds the response back: its latency (pick to response headers)
// and whether the host failed.
func (f *filter) Append(ctx api.Context, rh api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if f.h == nil || f.fed {
		return api.Continue
	}
	f.fed = true
	now := monoNow()
	info := ctx.Sender().RequestInfo()
	target, out := f.h, neutral
	status := rh.Status()
	if up := info.UpstreamHost(); up != "" {
		// The request reached a host: the one pinned, or Envoy chose another
		// (non-strict override of a host the cluster does not have).
		if up != f.h.addr {
			f.c.overrideMissed.Inc(1)
			target = f.c.bal.set.Load().byAddr[up]
		}
		out = success
		if status >= 500 {
			out = failure
		}
	} else if status >= 500 {
		// No connection was bound: Envoy's router failed to reach the host
		// (connect failure, reset, timeout), or someone else answered.
		details, _ := info.GetProperty("response.code_details")
		if upstreamFailure(details) {
			out = failure
		}
	}
	if target != nil {
		f.c.bal.feedback(target, now, now-f.start, out)
	}
	return api.Continue
}

// upstreamFailure tells Envoy's router failures from other local replies by
// their response code details.
func upstreamFailure(details string) bool {
	return strings.HasPrefix(details, "upstream_reset_before_response_started") ||
		strings.HasPrefix(details, "upstream_reset_after_response_started") ||
		details == "upstream_response_timeout" || details == "upstream_per_try_timeout"
}

// Log ends the request's accounting: the host has one request fewer in
// flight; a request that got no response (the client went away) tells its
// duration as a lower bound of the host's latency.
func (f *filter) Log(ctx api.Context, _ api.RequestHeaderMap, _ api.ResponseHeaderMap, _ api.RequestInfo) {
	if f.h == nil {
		return
	}
	if !f.fed {
		f.fed = true
		now := monoNow()
		f.c.bal.feedback(f.h, now, now-f.start, latencyOnly)
	}
	f.c.bal.release(f.h)
	f.h = nil
}
