// Package limitreq is the limit-req plugin: a local token bucket per key
// (client address, consumer, header, ...) with burst, optional delay and a
// bounded key cache.
package limitreq

import (
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "limit-req"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "local token-bucket request rate limit per key (e.g. $remote_addr, $consumer), with burst and optional delay",
		NewConfig:   newConfig,
		// Stateless filter over the config's shared buckets: no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// Config.Needs adds MayBlock when max_delay is set.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

type filter Config

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := (*Config)(f)
	rt := c.rt
	key := c.key.Render(ctx)
	if key == "" && c.EmptyKey == emptyReject {
		rt.rejectedEmpty.Inc(1)
		c.reply(ctx, c.EmptyKeyStatus, c.emptyKeyHdrs, "missing rate limit key")
		return api.Stop
	}
	d := rt.take(key)
	if !d.ok {
		rt.rejected.Inc(1)
		c.reject(ctx, d.retryAfter)
		return api.Stop
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
func (c *Config) reject(ctx api.Context, wait time.Duration) {
	ra := retryAfterHeader(wait)
	var h api.Headers
	if s := retryAfterSeconds(wait); s < int64(len(c.rejectHdrs)) {
		h = c.rejectHdrs[s]
	} else {
		h = api.Headers{"content-type": c.replyHdr, "retry-after": {ra}}
	}
	c.reply(ctx, c.Status, h, c.Message)
}

func (c *Config) reply(ctx api.Context, status int, h api.Headers, body string) {
	if err := ctx.Receiver().SendHijackReplyWithBody(status, h, body); err != nil {
		ctx.Log().Debugf("reply not sent: %v", err)
	}
}
