package limitcount

import (
	goruntime "runtime"
	"testing"
	"time"

	"github.com/moeproxy/moe/plugins/internal/redisclient"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// waitRecovered polls until a request is counted by Redis again (its quota
// headers are back), after Redis restarted.
func waitRecovered(t *testing.T, run *fakeenvoy.Runner) *fakeenvoy.Result {
	t.Helper()
	var res *fakeenvoy.Result
	if !tb.Poll(10*time.Second, func() bool { res = do(t, run); return hdr(res, "x-ratelimit-limit") != "" }) {
		t.Fatalf("not recovered 10s after Redis restarted: %d %v", res.Status, res.Headers)
	}
	return res
}

func TestRedisDownFailOpenAdmitsAndRecovers(t *testing.T) {
	logMark := fakeenvoy.MarkLogs()
	r := startRedis(t)
	run := runner(t, cfgFor(r, map[string]any{"count": 2, "time_window": "10s"}))
	if res := do(t, run); res.Status != 200 || hdr(res, "x-ratelimit-remaining") != "1" {
		t.Fatalf("before the outage: %d %v", res.Status, res.Headers)
	}
	r.Stop()
	before := snapshot()
	for i := 0; i < 10; i++ {
		start := time.Now()
		res := do(t, run)
		if res.Status != 200 {
			t.Fatalf("fail_open, Redis down, request %d: %d", i, res.Status)
		}
		if hdr(res, "x-ratelimit-limit") != "" {
			t.Errorf("quota headers without a quota: %v", res.Headers)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("request %d took %v with Redis down (timeout 50ms)", i, d)
		}
	}
	if n := before.delta("failure_passed"); n != 10 {
		t.Errorf("failure_passed %d, want 10", n)
	}
	if n := before.delta("redis_errors"); n != 10 {
		t.Errorf("redis_errors %d, want 10", n)
	}
	if n := len(fakeenvoy.LogsSince(logMark, "redis call failed, applying failure_policy fail_open")); n == 0 || n > 5 {
		t.Errorf("%d log lines about the outage, want a few (one per second at most)", n)
	}
	// Redis comes back empty: the script is loaded again (NOSCRIPT -> EVAL)
	// and counting starts over.
	r.Start()
	res := waitRecovered(t, run)
	if res.Status != 200 || hdr(res, "x-ratelimit-remaining") != "1" {
		t.Fatalf("after recovery: %d %v", res.Status, res.Headers)
	}
	do(t, run)
	if res := do(t, run); res.Status != 429 {
		t.Fatalf("limit not enforced after recovery: %d", res.Status)
	}
}

func TestRedisDownFailClosedRejectsAndRecovers(t *testing.T) {
	r := startRedis(t)
	run := runner(t, cfgFor(r, map[string]any{"count": 5, "failure_policy": "fail_closed"}))
	if res := do(t, run); res.Status != 200 {
		t.Fatalf("before the outage: %d", res.Status)
	}
	r.Stop()
	before := snapshot()
	res := do(t, run)
	if res.Status != 503 || res.Body != "rate limit service unavailable" || res.Upstream != nil {
		t.Fatalf("fail_closed, Redis down: %d %q", res.Status, res.Body)
	}
	if hdr(res, "x-ratelimit-limit") != "" || hdr(res, "retry-after") != "" {
		t.Errorf("503 carries quota headers: %v", res.Headers)
	}
	if before.delta("failure_rejected") != 1 {
		t.Error("failure_rejected not counted")
	}
	r.Start()
	if res := waitRecovered(t, run); res.Status != 200 {
		t.Fatalf("after recovery: %d", res.Status)
	}
}

func TestRedisDownLocalFallbackCountsPerInstance(t *testing.T) {
	r := startRedis(t)
	run := runner(t, cfgFor(r, map[string]any{"count": 3, "time_window": "10s", "failure_policy": "local"}))
	r.Stop()
	before := snapshot()
	codes := map[int]int{}
	for i := 0; i < 5; i++ {
		res := do(t, run)
		codes[res.Status]++
		if res.Status == 429 && hdr(res, "x-ratelimit-remaining") != "0" {
			t.Errorf("local 429 without quota headers: %v", res.Headers)
		}
	}
	// A 10s window aligned on the local clock: 3 fit unless a window boundary
	// falls between the requests, then up to 3 more.
	if codes[200] < 3 || codes[200]+codes[429] != 5 {
		t.Fatalf("local fallback, count 3: %v", codes)
	}
	if before.delta("fallback_passed") != uint64(codes[200]) || before.delta("fallback_rejected") != uint64(codes[429]) {
		t.Errorf("fallback metrics: %v", snapshot())
	}
}

// TestRedisTimeoutAppliesThePolicy pauses Redis (CLIENT PAUSE, Redis >= 6.2
// for ALL) so calls hang: each request must end after about redis.timeout.
func TestRedisTimeoutAppliesThePolicy(t *testing.T) {
	r := startRedis(t)
	open := runner(t, cfgFor(r, map[string]any{"count": 100, "redis": map[string]any{"timeout": "50ms"}}))
	closed := runner(t, cfgFor(r, map[string]any{"count": 100, "failure_policy": "fail_closed", "redis": map[string]any{"timeout": "80ms"}}))
	do(t, open) // connect first: the pause then hits a command, not a dial
	do(t, closed)
	if _, err := r.Do("CLIENT", "PAUSE", "1500", "ALL"); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	before := snapshot()
	for _, tc := range []struct {
		run    *fakeenvoy.Runner
		status int
		max    time.Duration
	}{{open, 200, 300 * time.Millisecond}, {closed, 503, 330 * time.Millisecond}} {
		start := time.Now()
		res := do(t, tc.run)
		took := time.Since(start)
		if res.Status != tc.status {
			t.Errorf("paused Redis: %d, want %d", res.Status, tc.status)
		}
		if took > tc.max || took < 40*time.Millisecond {
			t.Errorf("paused Redis: request took %v, want about the timeout", took)
		}
		t.Logf("paused Redis: %d after %v", res.Status, took)
	}
	if n := before.delta("redis_timeouts"); n != 2 {
		t.Errorf("redis_timeouts %d, want 2", n)
	}
}

// TestConfigReloadsDoNotLeakConnections: config versions with one Redis
// config share a client; the last Destroy closes it and its connections.
func TestConfigReloadsDoNotLeakConnections(t *testing.T) {
	r := startRedis(t)
	base := r.ConnectedClients()
	clientsBefore := redisclient.Live()
	cfg := cfgFor(r, map[string]any{"count": 1000})
	first, err := fakeenvoy.NewPlugin(Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	do(t, first)
	for i := 0; i < 10; i++ {
		next, err := fakeenvoy.NewPlugin(Name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if n := redisclient.Live(); n != clientsBefore+1 {
			t.Fatalf("version %d: %d live clients, want one shared", i, n-clientsBefore)
		}
		do(t, next)
		destroy(first) // the old version goes away, the new one serves
		first = next
	}
	other, err := fakeenvoy.NewPlugin(Name, cfgFor(r, map[string]any{"redis": map[string]any{"timeout": "70ms"}}))
	if err != nil {
		t.Fatal(err)
	}
	if n := redisclient.Live(); n != clientsBefore+2 {
		t.Errorf("another Redis config: %d live clients, want 2", n-clientsBefore)
	}
	do(t, other)
	if n := r.ConnectedClients(); n > base+2 {
		t.Errorf("%d connections to Redis after 11 config versions of one config and one other, want 2", n-base)
	}
	destroy(first)
	destroy(other)
	if n := redisclient.Live(); n != clientsBefore {
		t.Errorf("%d live clients after every version was destroyed", n-clientsBefore)
	}
	if !tb.Poll(2*time.Second, func() bool { return r.ConnectedClients() == base }) {
		t.Errorf("%d connections left open after Destroy", r.ConnectedClients()-base)
	}
}

// TestDroppedConfigWithoutDestroyReleasesItsClient: a config Envoy never
// got (a later plugin of its chain failed) is never destroyed; its client
// reference is released when the config is garbage collected.
func TestDroppedConfigWithoutDestroyReleasesItsClient(t *testing.T) {
	r := startRedis(t)
	before := redisclient.Live()
	run, err := fakeenvoy.NewPlugin(Name, cfgFor(r, map[string]any{"redis": map[string]any{"timeout": "77ms"}}))
	if err != nil {
		t.Fatal(err)
	}
	do(t, run)
	if redisclient.Live() != before+1 {
		t.Fatal("no client")
	}
	run = nil
	if !tb.Poll(5*time.Second, func() bool { goruntime.GC(); return redisclient.Live() == before }) {
		t.Fatal("the client of a dropped config is still open after GC")
	}
}
