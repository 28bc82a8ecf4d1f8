package limitcount

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/moeproxy/moe/plugins/internal/redisclient"
	"github.com/moeproxy/moe/shared/api"
)

// limiter is what a config version owns at run time: the counter store, the
// fallback and the metrics.
type limiter struct {
	client   *redisclient.Client
	release  func() // drops this config's reference on client
	store    store
	local    *localStore // failure_policy local
	timeout  time.Duration
	closeOne sync.Once

	passed, rejected, rejectedEmpty  api.Counter
	redisErrors, redisTimeouts       api.Counter
	failedOpen, failedClosed         api.Counter
	fallbackPassed, fallbackRejected api.Counter
	latency                          api.Histogram
	clientsGauge                     api.Gauge
	lastErrLog                       atomic.Int64 // unix ns of the last logged Redis error
	errLogEvery                      time.Duration
}

// latencyBoundsUS are the Redis latency histogram buckets, in microseconds.
var latencyBoundsUS = []uint64{100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000}

func newLimiter(c *Config, m api.Metrics) (*limiter, error) {
	rt := &limiter{
		timeout:          c.Redis.Timeout.D(),
		passed:           m.Counter("passed"),
		rejected:         m.Counter("rejected"),
		rejectedEmpty:    m.Counter("rejected_empty_key"),
		redisErrors:      m.Counter("redis_errors"),
		redisTimeouts:    m.Counter("redis_timeouts"),
		failedOpen:       m.Counter("failure_passed"),
		failedClosed:     m.Counter("failure_rejected"),
		fallbackPassed:   m.Counter("fallback_passed"),
		fallbackRejected: m.Counter("fallback_rejected"),
		latency:          m.Histogram("redis_latency_us", latencyBoundsUS),
		clientsGauge:     m.Gauge("redis_clients"),
		errLogEvery:      time.Second,
	}
	var err error
	if rt.client, rt.release, err = redisclient.Acquire(&c.Redis); err != nil {
		return nil, err
	}
	rt.clientsGauge.Set(uint64(redisclient.Live()))
	script := fixedScript
	if c.sliding {
		script = slidingScript
	}
	rt.store = &redisStore{client: rt.client, script: script, args: []any{c.Count, c.windowMS}}
	if c.FailurePolicy == failLocal {
		rt.local = newLocalStore(c.Count, c.TimeWindow.D())
	}
	return rt, nil
}

func (rt *limiter) close() {
	rt.closeOne.Do(func() {
		rt.release()
		rt.clientsGauge.Set(uint64(redisclient.Live()))
	})
}

// take asks Redis with a deadline of redis.timeout (CallContext: not derived
// from the request's context, which would cost a goroutine per request).
func (rt *limiter) take(key string) (decision, error) {
	ctx, cancel := rt.client.CallContext()
	start := time.Now()
	d, err := rt.store.take(ctx, key)
	cancel()
	if err == nil {
		rt.latency.Record(uint64(time.Since(start).Microseconds()))
	}
	return d, err
}

// noteError counts a failed Redis call and logs at most one line per second:
// an outage must not flood Envoy's log. Errors from go-redis name the
// address, never the password.
func (rt *limiter) noteError(ctx api.Context, policy string, err error) {
	rt.redisErrors.Inc(1)
	timeout := redisclient.IsTimeout(err)
	if timeout {
		rt.redisTimeouts.Inc(1)
	}
	now := time.Now().UnixNano()
	last := rt.lastErrLog.Load()
	if now-last >= int64(rt.errLogEvery) && rt.lastErrLog.CompareAndSwap(last, now) {
		if timeout {
			ctx.Log().Warnf("redis call timed out after %v, applying failure_policy %s: %v", rt.timeout, policy, err)
		} else {
			ctx.Log().Warnf("redis call failed, applying failure_policy %s: %v", policy, err)
		}
	}
}
