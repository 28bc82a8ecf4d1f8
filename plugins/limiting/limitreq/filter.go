package limitreq

import (
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// filter is the config itself, seen as a filter: stateless per request.
type filter Config

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := (*Config)(f)
	rt := c.rt
	key := c.Key.Render(ctx)
	if key == "" && c.EmptyKey == emptyReject {
		rt.rejectedEmpty.Inc(1)
		return ctx.Reply(c.EmptyKeyStatus, "missing rate limit key", c.emptyKeyHdrs)
	}
	d := rt.take(key)
	if !d.ok {
		rt.rejected.Inc(1)
		return c.reject(ctx, d.retryAfter)
	}
	if d.wait > 0 {
		// Only reached with max_delay set, where Needs declares MayBlock: this
		// runs in a goroutine, not on Envoy's worker thread.
		rt.delayed.Inc(1)
		t := time.NewTimer(d.wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			// The client went away: give the token back to the others.
			t.Stop()
			d.reserve.CancelAt(rt.now())
			return api.Continue
		}
	}
	rt.passed.Inc(1)
	return api.Continue
}

// reject answers Status with Retry-After. The headers of the common short
// waits are prebuilt (the framework copies reply headers), so a flood of
// rejections allocates little.
func (c *Config) reject(ctx api.Context, wait time.Duration) api.Status {
	var h api.Headers
	if s := retryAfterSeconds(wait); s < int64(len(c.rejectHdrs)) {
		h = c.rejectHdrs[s]
	} else {
		h = api.Headers{"content-type": c.replyHdr, "retry-after": {retryAfterHeader(wait)}}
	}
	return ctx.Reply(c.Status, c.Message, h)
}
