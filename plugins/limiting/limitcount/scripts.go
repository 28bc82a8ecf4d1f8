package limitcount

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Both scripts take KEYS[1] (the counter), ARGV[1] (count) and ARGV[2] (the
// window in ms), and return {allowed 0|1, remaining, reset_ms, retry_ms}:
// reset_ms is the time until the current window ends, retry_ms (rejections
// only) the time until one more request would be admitted. A script runs
// atomically in Redis, so every Envoy instance sees one consistent counter,
// with one round trip per request.

// fixedScript: the window starts at the key's first request (INCR creates
// the key, PEXPIRE ends the window), as in APISIX/Kong's redis policy.
// Rejected requests are counted too; that only raises a number already past
// the limit and saves a read.
var fixedScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
local win = tonumber(ARGV[2])
local ttl = win
if n == 1 then
  redis.call('PEXPIRE', KEYS[1], win)
else
  ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then
    -- a key without expiry (written by something else): start a window
    redis.call('PEXPIRE', KEYS[1], win)
    ttl = win
  end
end
local limit = tonumber(ARGV[1])
if n > limit then
  return {0, 0, ttl, ttl}
end
return {1, limit - n, ttl, 0}
`)

// slidingScript: the two-window weighted approximation (as Cloudflare and
// nginx describe it): windows are aligned on Redis' clock (TIME, so Envoy
// clocks need not agree), and a request is admitted while
//
//	previous_count * (time left in the current window / window) + current_count < count
//
// One small hash per key {w: window index, c: current count, p: previous
// count}, O(1) per request and a few bytes per key. A sorted set of
// timestamps would be exact but costs O(log n) per request and memory
// proportional to count per key (a 10000/min limit keeps 10000 members per
// key); the estimate's error is bounded by the previous window's unevenness
// and is zero under steady load. Rejected requests are not counted, so a
// client that keeps retrying is admitted again as soon as the rate allows.
var slidingScript = redis.NewScript(`
redis.replicate_commands() -- TIME before a write; a no-op since Redis 5
local limit = tonumber(ARGV[1])
local win = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local idx = math.floor(now / win)
local elapsed = now - idx * win
local v = redis.call('HMGET', KEYS[1], 'w', 'c', 'p')
local w = tonumber(v[1])
local c = tonumber(v[2]) or 0
local p = tonumber(v[3]) or 0
if w == nil then
  c, p = 0, 0
elseif w == idx - 1 then
  p, c = c, 0
elseif w < idx - 1 then
  c, p = 0, 0
end -- w >= idx (Redis' clock stepped back): keep counting in w
local left = win - elapsed
local est = p * left / win + c
if est + 1 > limit then
  local retry
  if c < limit then
    -- the previous window's share decays linearly
    retry = left - (limit - 1 - c) * win / p
  else
    -- only after this window ends, when c becomes the decaying share
    retry = left + win - (limit - 1) * win / c
  end
  return {0, 0, left, math.ceil(retry)}
end
c = c + 1
redis.call('HSET', KEYS[1], 'w', math.max(idx, w or idx), 'c', c, 'p', p)
redis.call('PEXPIRE', KEYS[1], 2 * win)
return {1, math.floor(limit - (est + 1)), left, 0}
`)

// decision is the outcome of one counter call.
type decision struct {
	allowed   bool
	remaining int64
	resetMS   int64
	retryMS   int64
}

// store is a counter backend; redisStore in production, stubs in tests and
// benchmarks (to measure the Go side alone).
type store interface {
	take(ctx context.Context, key string) (decision, error)
}

type redisStore struct {
	client redis.UniversalClient
	script *redis.Script
	args   []any // count and window, boxed once
}

func (s *redisStore) take(ctx context.Context, key string) (decision, error) {
	// Run is EVALSHA, falling back to EVAL (which caches the script) after a
	// NOSCRIPT, e.g. the first call after Redis restarted.
	res, err := s.script.Run(ctx, s.client, []string{key}, s.args...).Int64Slice()
	if err != nil {
		return decision{}, err
	}
	if len(res) != 4 {
		return decision{}, fmt.Errorf("unexpected script reply %v", res)
	}
	return decision{allowed: res[0] == 1, remaining: res[1], resetMS: res[2], retryMS: res[3]}, nil
}
