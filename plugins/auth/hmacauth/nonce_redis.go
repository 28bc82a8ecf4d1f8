package hmacauth

import (
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/moeproxy/moe/plugins/internal/redisclient"
	"github.com/moeproxy/moe/shared/api"
)

// redisNonces keeps nonces in Redis, so every instance using the same Redis
// (and key_prefix) refuses a nonce any of them has accepted. One command per
// signed request, SET <prefix><id> 1 PX <ttl> NX: the check and the record
// are one atomic step, so two instances receiving the same request at the
// same moment cannot both accept it.
//
// The key is a hash of (keyId, nonce) (nonceKey), hex: fixed length, and
// neither the nonce nor the key id is stored in clear. Its lifetime is the
// rest of the window in this instance's clock (date + clock_skew - now) plus
// clock_skew, so an instance whose clock is up to clock_skew behind this one
// still finds the key while its own date check would accept the replay.
type redisNonces struct {
	client   *redisclient.Client
	release  func()
	closeOne sync.Once
	prefix   string
	margin   time.Duration
	failOpen bool
	timeout  time.Duration
	policy   string

	errors, timeouts, failedOpen api.Counter
	latency                      api.Histogram
	lastErrLog                   atomic.Int64 // unix ns of the last logged error
	errLogEvery                  time.Duration
}

// latencyBoundsUS are the Redis latency histogram buckets, in microseconds.
var latencyBoundsUS = []uint64{100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000}

func newRedisNonces(s *NonceStore, skew time.Duration, env api.ConfigEnv) (*redisNonces, error) {
	m := env.Metrics()
	rn := &redisNonces{
		prefix:      s.KeyPrefix,
		margin:      skew,
		failOpen:    s.FailurePolicy == failOpen,
		policy:      s.FailurePolicy,
		timeout:     s.Redis.Timeout.D(),
		errors:      m.Counter("nonce_store_errors"),
		timeouts:    m.Counter("nonce_store_timeouts"),
		failedOpen:  m.Counter("nonce_store_failed_open"),
		latency:     m.Histogram("nonce_store_latency_us", latencyBoundsUS),
		errLogEvery: time.Second,
	}
	var err error
	if rn.client, rn.release, err = redisclient.Acquire(&s.Redis); err != nil {
		return nil, err
	}
	env.Log().Infof("nonces in %s, key prefix %q, failure_policy %s", s.Redis.String(), s.KeyPrefix, s.FailurePolicy)
	return rn, nil
}

func (rn *redisNonces) close() { rn.closeOne.Do(rn.release) }

// redisKey is prefix + hex(nonceKey(keyID, nonce)).
func (rn *redisNonces) redisKey(keyID, nonce string) string {
	id := nonceKey(keyID, nonce)
	var buf [2 * len(id)]byte
	hex.Encode(buf[:], id[:])
	return rn.prefix + string(buf[:])
}

// ttl is the key's lifetime in whole milliseconds, rounded up, at least 1.
func (rn *redisNonces) ttl(now, expires time.Time) int64 {
	d := expires.Sub(now) + rn.margin
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	if ms < 1 {
		ms = 1
	}
	return ms
}

// check runs SET NX PX with a deadline of redis.timeout (CallContext: not
// derived from the request's context, which would cost a goroutine per
// request; the call is short). On an error or a timeout the failure policy
// decides: fail_closed answers failure_status, fail_open lets the request
// through without a replay check.
func (rn *redisNonces) check(ctx api.Context, keyID, nonce string, now, expires time.Time) nonceResult {
	cctx, cancel := rn.client.CallContext()
	start := time.Now()
	cmd := redis.NewBoolCmd(cctx, "set", rn.redisKey(keyID, nonce), "1", "px", rn.ttl(now, expires), "nx")
	_ = rn.client.Process(cctx, cmd)
	fresh, err := cmd.Result() // a nil reply (key exists) is false, no error
	cancel()
	if err != nil {
		rn.noteError(ctx, err)
		if rn.failOpen {
			rn.failedOpen.Inc(1)
			return nonceFresh
		}
		return nonceUnavailable
	}
	rn.latency.Record(uint64(time.Since(start).Microseconds()))
	if !fresh {
		return nonceReplay
	}
	return nonceFresh
}

// noteError counts a failed call and logs at most one line per second: an
// outage must not flood Envoy's log. go-redis errors name the address, never
// the password; nothing about the request's credentials is logged.
func (rn *redisNonces) noteError(ctx api.Context, err error) {
	rn.errors.Inc(1)
	timeout := redisclient.IsTimeout(err)
	if timeout {
		rn.timeouts.Inc(1)
	}
	now := time.Now().UnixNano()
	last := rn.lastErrLog.Load()
	if now-last < int64(rn.errLogEvery) || !rn.lastErrLog.CompareAndSwap(last, now) {
		return
	}
	if timeout {
		ctx.Log().Warnf("nonce store: redis call timed out after %v, applying failure_policy %s: %v", rn.timeout, rn.policy, err)
	} else {
		ctx.Log().Warnf("nonce store: redis call failed, applying failure_policy %s: %v", rn.policy, err)
	}
}
