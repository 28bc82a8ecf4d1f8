package limitreq

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/moeproxy/moe/shared/api"
)

// compiled is what Init builds once per config version. Buckets belong to
// the config: a new config version starts with full buckets.
type compiled struct {
	rt           *state
	replyHdr     []string // reply content type, shared (the framework copies reply headers)
	emptyKeyHdrs api.Headers
	rejectHdrs   [11]api.Headers // by Retry-After seconds 0..10
}

// state is the per-config state: buckets, clock, metrics.
type state struct {
	limit    rate.Limit
	burst    int
	maxDelay time.Duration
	now      func() time.Time // time.Now; a fake clock in tests
	cache    *bucketCache

	passed, rejected, rejectedEmpty, delayed, evicted api.Counter
	keys                                              api.Gauge
}

// Init builds the bucket cache, metrics and the reply headers.
func (c *Config) Init(env api.ConfigEnv) error {
	c.rt = newState(c, env.Metrics(), time.Now)
	c.replyHdr = []string{"text/plain; charset=utf-8"}
	c.emptyKeyHdrs = api.Headers{"content-type": c.replyHdr}
	for s := range c.rejectHdrs {
		c.rejectHdrs[s] = api.Headers{"content-type": c.replyHdr, "retry-after": {retryAfterValues[s]}}
	}
	return nil
}

// Destroy runs when Envoy drops this config version: its buckets go away
// with it, so take them out of the shared "keys" gauge.
func (c *Config) Destroy() {
	if c.rt != nil {
		c.rt.keys.Add(-int64(c.rt.cache.len()))
	}
}

func newState(c *Config, m api.Metrics, now func() time.Time) *state {
	rt := &state{
		limit:         rate.Limit(c.Rate),
		burst:         c.Burst,
		maxDelay:      c.MaxDelay.D(),
		now:           now,
		passed:        m.Counter("passed"),
		rejected:      m.Counter("rejected"),
		rejectedEmpty: m.Counter("rejected_empty_key"),
		delayed:       m.Counter("delayed"),
		evicted:       m.Counter("evicted_keys"),
		keys:          m.Gauge("keys"),
	}
	rt.cache = newBucketCache(c.MaxKeys,
		func() *rate.Limiter { rt.keys.Add(1); return rate.NewLimiter(rt.limit, rt.burst) },
		func() { rt.keys.Add(-1); rt.evicted.Inc(1) })
	return rt
}
