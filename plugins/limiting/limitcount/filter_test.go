package limitcount

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

func TestFixedWindowAdmitsCountThenRejectsWithQuotaHeaders(t *testing.T) {
	r := startRedis(t)
	run := runner(t, cfgFor(r, map[string]any{"count": 3, "time_window": "1s"}))
	before := snapshot()
	for i := int64(0); i < 3; i++ {
		res := do(t, run)
		if res.Status != 200 {
			t.Fatalf("request %d: %d", i, res.Status)
		}
		if got := hdr(res, "x-ratelimit-limit"); got != "3" {
			t.Errorf("request %d: X-RateLimit-Limit %q", i, got)
		}
		if got := hdrInt(t, res, "x-ratelimit-remaining"); got != 2-i {
			t.Errorf("request %d: X-RateLimit-Remaining %d, want %d", i, got, 2-i)
		}
		if got := hdrInt(t, res, "x-ratelimit-reset"); got != 1 {
			t.Errorf("request %d: X-RateLimit-Reset %d, want 1", i, got)
		}
	}
	res := do(t, run)
	if res.Status != 429 || res.LocalReply == nil || res.Upstream != nil {
		t.Fatalf("4th request: %d reply %+v upstream %v", res.Status, res.LocalReply, res.Upstream)
	}
	if res.Body != "Too Many Requests" || hdr(res, "retry-after") != "1" || hdr(res, "x-ratelimit-remaining") != "0" ||
		hdr(res, "x-ratelimit-limit") != "3" || hdr(res, "x-ratelimit-reset") != "1" {
		t.Errorf("429: body %q headers %v", res.Body, res.Headers)
	}
	if p, rj := before.delta("passed"), before.delta("rejected"); p != 3 || rj != 1 {
		t.Errorf("metrics passed %d rejected %d, want 3 and 1", p, rj)
	}
	// The window started at the first request and lasts 1s.
	time.Sleep(1100 * time.Millisecond)
	if res := do(t, run); res.Status != 200 || hdr(res, "x-ratelimit-remaining") != "2" {
		t.Fatalf("after the window: %d remaining %q", res.Status, hdr(res, "x-ratelimit-remaining"))
	}
}

func TestKeysAreIndependentAndComposite(t *testing.T) {
	r := startRedis(t)
	run := runner(t, cfgFor(r, map[string]any{"count": 1, "time_window": "10s", "key": "$route_name:$header_x-user"}))
	for _, u := range []string{"alice", "bob"} {
		if res := do(t, run, "x-user", u); res.Status != 200 {
			t.Fatalf("%s first: %d", u, res.Status)
		}
		if res := do(t, run, "x-user", u); res.Status != 429 {
			t.Fatalf("%s second: %d", u, res.Status)
		}
	}
	keys, err := r.Do("KEYS", "*")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(keys)
	for _, want := range []string{"moe:limit-count:{r1:alice}:f10000", "moe:limit-count:{r1:bob}:f10000"} {
		if !strings.Contains(got, want) {
			t.Errorf("redis keys %s, want %s", got, want)
		}
	}
	ttl, _ := r.Do("PTTL", "moe:limit-count:{r1:alice}:f10000")
	if n, _ := ttl.(int64); n <= 0 || n > 10000 {
		t.Errorf("PTTL %v, want within the 10s window", ttl)
	}
}

func TestRemoteAddrKeyIgnoresThePort(t *testing.T) {
	r := startRedis(t)
	run := runner(t, cfgFor(r, map[string]any{"count": 2}))
	if res := do(t, run, "remote", "192.0.2.9:1000"); res.Status != 200 {
		t.Fatal(res.Status)
	}
	if res := do(t, run, "remote", "192.0.2.9:2000"); res.Status != 200 || hdr(res, "x-ratelimit-remaining") != "0" {
		t.Fatalf("second connection of the same client: %d remaining %q", res.Status, hdr(res, "x-ratelimit-remaining"))
	}
	if res := do(t, run, "remote", "[2001:db8::1]:3000"); res.Status != 200 || hdr(res, "x-ratelimit-remaining") != "1" {
		t.Fatalf("another client: %d %v", res.Status, res.Headers)
	}
}

func TestEmptyKey(t *testing.T) {
	r := startRedis(t)
	shared := runner(t, cfgFor(r, map[string]any{"count": 1, "time_window": "10s", "key": "$header_x-user"}))
	if res := do(t, shared); res.Status != 200 {
		t.Fatalf("shared empty key, first: %d", res.Status)
	}
	if res := do(t, shared); res.Status != 429 {
		t.Fatalf("shared empty key, second: %d", res.Status)
	}
	reject := runner(t, cfgFor(r, map[string]any{"key": "$header_x-user", "empty_key": "reject", "key_prefix": "other:"}))
	before := snapshot()
	res := do(t, reject)
	if res.Status != 400 || res.Body != "missing rate limit key" {
		t.Fatalf("reject empty key: %d %q", res.Status, res.Body)
	}
	if before.delta("rejected_empty_key") != 1 {
		t.Error("rejected_empty_key not counted")
	}
}

func TestNoHeadersWhenDisabled(t *testing.T) {
	r := startRedis(t)
	run := runner(t, cfgFor(r, map[string]any{"count": 1, "headers": false, "status": 403, "message": "quota"}))
	res := do(t, run)
	if res.Status != 200 || hdr(res, "x-ratelimit-limit") != "" {
		t.Fatalf("first: %d %v", res.Status, res.Headers)
	}
	res = do(t, run)
	if res.Status != 403 || res.Body != "quota" || hdr(res, "x-ratelimit-limit") != "" || hdr(res, "retry-after") == "" {
		t.Fatalf("rejected: %d %q %v", res.Status, res.Body, res.Headers)
	}
}

// TestTwoInstancesShareOneCounter: two config versions (as two Envoy
// instances would parse them) with the same key count against one counter.
func TestTwoInstancesShareOneCounter(t *testing.T) {
	r := startRedis(t)
	// Different timeouts: each instance has its own client and connections.
	a := runner(t, cfgFor(r, map[string]any{"count": 10, "time_window": "10s", "key": "$header_x-tenant"}))
	b := runner(t, cfgFor(r, map[string]any{"count": 10, "time_window": "10s", "key": "$header_x-tenant",
		"redis": map[string]any{"timeout": "60ms"}}))
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		run := a
		if i%2 == 1 {
			run = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := run.Do(fakeenvoy.Request{Headers: [][2]string{{"x-tenant", "t1"}}})
			mu.Lock()
			codes[res.Status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[200] != 10 || codes[429] != 10 {
		t.Fatalf("20 concurrent requests over two instances against count 10: %v", codes)
	}
}

func TestSlidingWindowWeighsThePreviousWindow(t *testing.T) {
	r := startRedis(t)
	const win = 1000 // ms
	run := runner(t, cfgFor(r, map[string]any{"count": 5, "time_window": "1s", "window": "sliding"}))
	// Start right after a window boundary on Redis' clock.
	waitForWindowOffset(t, r, win, 10, true)
	for i := 0; i < 5; i++ {
		if res := do(t, run); res.Status != 200 {
			t.Fatalf("request %d: %d", i, res.Status)
		}
	}
	res := do(t, run)
	if res.Status != 429 {
		t.Fatalf("6th request in the window: %d", res.Status)
	}
	// The whole 5 are in this window: wait for the end of the window, plus the
	// part the previous count takes to decay to one free slot (1/5 of it).
	if ra := hdrInt(t, res, "retry-after"); ra != 2 {
		t.Errorf("Retry-After %d, want 2 (rest of this window + 1/5 of the next)", ra)
	}
	// 100ms into the next window the previous 5 still weigh 4.5: a fixed
	// window would admit 5 again, the sliding estimate admits none.
	waitForWindowOffset(t, r, win, 100, true)
	if res := do(t, run); res.Status != 429 {
		t.Fatalf("100ms into the next window: %d, want 429 (5 x 0.9 + 1 > 5)", res.Status)
	}
	// 600ms in, they weigh 2: three more fit (2 + 3 = 5).
	waitForWindowOffset(t, r, win, 600, false)
	codes := map[int]int{}
	for i := 0; i < 5; i++ {
		codes[do(t, run).Status]++
	}
	if codes[200] != 3 || codes[429] != 2 {
		t.Fatalf("600ms into the next window: %v, want 3 admitted and 2 rejected", codes)
	}
}

// waitForWindowOffset sleeps until Redis' clock is offsetMS into the
// current window, or into the next one if next is set or the offset passed.
func waitForWindowOffset(t *testing.T, r *redisServer, winMS, offsetMS int64, next bool) {
	t.Helper()
	v, err := r.Do("TIME")
	if err != nil {
		t.Fatal(err)
	}
	tm := v.([]any)
	var s, us int64
	fmt.Sscan(tm[0].(string), &s)
	fmt.Sscan(tm[1].(string), &us)
	now := s*1000 + us/1000
	wait := offsetMS - now%winMS
	if next || wait < 0 {
		wait += winMS
	}
	time.Sleep(time.Duration(wait) * time.Millisecond)
}

func TestRedisKeyHashesLongKeys(t *testing.T) {
	c := &Config{KeyPrefix: "p:", compiled: compiled{keySuffix: "}:f1000"}}
	if got := c.redisKey("alice"); got != "p:{alice}:f1000" {
		t.Errorf("short key: %q", got)
	}
	long := strings.Repeat("x", 5000)
	got := c.redisKey(long)
	if len(got) > 60 || !strings.HasPrefix(got, "p:{sha256:") || got == c.redisKey(long+"y") {
		t.Errorf("long key: %q", got)
	}
}

func TestKeyTemplateRendering(t *testing.T) {
	r := startRedis(t)
	cases := []struct {
		key, want string
		kv        []string
	}{
		{"$remote_addr", "192.0.2.1", nil},
		{"$route_name:$remote_addr", "r1:192.0.2.1", nil},
		{"${header_x-user}.v1:$$", "alice.v1:$", []string{"x-user", "alice"}},
		{"$header_x-user.", "alice.", []string{"x-user", "alice"}},
		{"$method $path", "GET /", nil},
		{"$header_x-user", "用户}{\tx", []string{"x-user", "用户}{\tx"}},
	}
	for i, tc := range cases {
		run := runner(t, cfgFor(r, map[string]any{"key": tc.key, "key_prefix": fmt.Sprintf("k%d:", i)}))
		if res := do(t, run, tc.kv...); res.Status != 200 {
			t.Fatalf("%s: %d", tc.key, res.Status)
		}
		want := fmt.Sprintf("k%d:{%s}:f1000", i, tc.want)
		if v, err := r.Do("EXISTS", want); err != nil || v.(int64) != 1 {
			keys, _ := r.Do("KEYS", fmt.Sprintf("k%d:*", i))
			t.Errorf("key %q: no %q in Redis (have %v)", tc.key, want, keys)
		}
	}
}

func TestEmptyKeyRejectsCompositeKeysMissingAPart(t *testing.T) {
	r := startRedis(t)
	run := runner(t, cfgFor(r, map[string]any{"key": "$route_name:$header_x-user", "empty_key": "reject"}))
	if res := do(t, run); res.Status != 400 {
		t.Fatalf("no x-user: %d, want 400", res.Status)
	}
	if res := do(t, run, "x-user", ""); res.Status != 400 {
		t.Fatalf("empty x-user: %d, want 400", res.Status)
	}
	if res := do(t, run, "x-user", "u"); res.Status != 200 {
		t.Fatalf("with x-user: %d", res.Status)
	}
}
