package limitcount

import (
	"strconv"
	"sync/atomic"

	"github.com/moeproxy/moe/shared/api"
)

// newFilter: with headers on, a small per-request object carries the quota
// from OnReceive to Append; without, one shared stateless filter per config
// (no Append, so the response path costs nothing).
func newFilter(c *Config) api.Filter {
	if c.Headers {
		return &filter{cfg: c}
	}
	return (*bareFilter)(c)
}

type bareFilter Config

func (f *bareFilter) OnReceive(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	_, _, st := (*Config)(f).check(ctx)
	return st
}

type filter struct {
	cfg *Config
	// ready is set after remaining/resetMS are written (in OnReceive's
	// goroutine) and read before them in Append: the atomic orders the two
	// even if Envoy encodes a local reply while OnReceive still runs.
	ready     atomic.Bool
	remaining int64
	resetMS   int64
}

func (f *filter) OnReceive(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	d, known, st := f.cfg.check(ctx)
	if known {
		f.remaining, f.resetMS = d.remaining, d.resetMS
		f.ready.Store(true)
	}
	return st
}

// Append adds the quota headers to the response (the upstream's, or a local
// reply such as our own 429).
func (f *filter) Append(_ api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if f.ready.Load() {
		_ = h.Set(hdrLimit, f.cfg.limitHdr[0])
		_ = h.Set(hdrRemaining, strconv.FormatInt(f.remaining, 10))
		_ = h.Set(hdrReset, strconv.FormatInt(ceilSeconds(f.resetMS), 10))
	}
	return api.Continue
}

const (
	hdrLimit      = "x-ratelimit-limit"
	hdrRemaining  = "x-ratelimit-remaining"
	hdrReset      = "x-ratelimit-reset"
	hdrRetryAfter = "retry-after"
)

// check counts the request and replies when it must not pass. known reports
// whether d holds a quota to show in headers (not after a Redis failure
// under fail_open).
func (c *Config) check(ctx api.Context) (d decision, known bool, st api.Status) {
	rt := c.rt
	key, complete := c.Key.RenderComplete(ctx)
	if !complete && c.EmptyKey == emptyReject {
		rt.rejectedEmpty.Inc(1)
		return d, false, ctx.Reply(c.EmptyKeyStatus, "missing rate limit key", c.emptyHdrs)
	}
	d, err := rt.take(c.redisKey(key))
	if err != nil {
		rt.noteError(ctx, c.FailurePolicy, err)
		switch c.FailurePolicy {
		case failClosed:
			rt.failedClosed.Inc(1)
			return d, false, ctx.Reply(c.FailureStatus, "rate limit service unavailable", c.failHdrs)
		case failLocal:
			d, _ = rt.local.take(ctx, key)
			if !d.allowed {
				rt.fallbackRejected.Inc(1)
				return d, true, c.reject(ctx, d)
			}
			rt.fallbackPassed.Inc(1)
			return d, true, api.Continue
		default:
			rt.failedOpen.Inc(1)
			return d, false, api.Continue
		}
	}
	if !d.allowed {
		rt.rejected.Inc(1)
		return d, true, c.reject(ctx, d)
	}
	rt.passed.Inc(1)
	return d, true, api.Continue
}

// reject answers Status with Retry-After (and the quota headers).
func (c *Config) reject(ctx api.Context, d decision) api.Status {
	h := api.Headers{
		"content-type": c.replyHdr,
		hdrRetryAfter:  {strconv.FormatInt(max(1, ceilSeconds(d.retryMS)), 10)},
	}
	if c.Headers {
		h[hdrLimit] = c.limitHdr
		h[hdrRemaining] = []string{"0"}
		h[hdrReset] = []string{strconv.FormatInt(ceilSeconds(d.resetMS), 10)}
	}
	return ctx.Reply(c.Status, c.Message, h)
}

func ceilSeconds(ms int64) int64 {
	if ms <= 0 {
		return 0
	}
	return (ms + 999) / 1000
}
