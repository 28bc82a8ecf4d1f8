package limitreq

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// send runs one request through the filter; it returns 0 when passed on, or
// the reply status.
func send(t testing.TB, f api.ReceiverFilter, ctx *fakeframework.Context) int {
	t.Helper()
	ctx.Replied = nil
	st := f.OnReceive(ctx, ctx.Req, nil, nil)
	switch {
	case st == api.Continue && ctx.Replied == nil:
		return 0
	case st == api.Stop && ctx.Replied != nil:
		return ctx.Replied.Code
	}
	t.Fatalf("inconsistent result: %v with reply %+v", st, ctx.Replied)
	return -1
}

// TestAccuracyOverLimit offers a steady load above the limit with a fake
// clock and checks the admitted rate is within 10% of the configured rate.
func TestAccuracyOverLimit(t *testing.T) {
	cases := []struct {
		name       string
		rate       float64
		burst      int
		offeredRPS int
		seconds    int
	}{
		{"200 rps offered, 50 rps limit, 5 s", 50, 1, 200, 5},
		{"200 rps offered, 50 rps limit, burst 10", 50, 10, 200, 5},
		{"1000 rps offered, 300 rps limit, burst 30", 300, 30, 1000, 5},
		{"10 rps offered, 0.5 rps limit, 20 s", 0.5, 1, 10, 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			c, m := parse(t, fmt.Sprintf(`{"rate":%v,"burst":%d}`, tc.rate, tc.burst), clock)
			f := filterOf(c)
			ctx := newCtx("192.0.2.1:4000", newReq())
			step := time.Second / time.Duration(tc.offeredRPS)
			admitted := 0
			for i := 0; i < tc.offeredRPS*tc.seconds; i++ {
				if send(t, f, ctx) == 0 {
					admitted++
				}
				clock.Advance(step)
			}
			got := float64(admitted) / float64(tc.seconds)
			t.Logf("offered %d rps for %d s against %v rps (burst %d): admitted %d = %.2f rps (%.1f%% of the limit)",
				tc.offeredRPS, tc.seconds, tc.rate, tc.burst, admitted, got, 100*got/tc.rate)
			if got < 0.9*tc.rate || got > 1.1*tc.rate {
				t.Errorf("admitted %.2f rps, want within 10%% of %v", got, tc.rate)
			}
			// A token bucket admits exactly burst + the tokens earned between the
			// first and the last request.
			last := time.Duration(tc.offeredRPS*tc.seconds-1) * step
			if want := tc.burst + int(tc.rate*last.Seconds()+1e-9); admitted != want {
				t.Errorf("admitted %d, want exactly burst+rate*T = %d", admitted, want)
			}
			if p, r := m.Value("passed"), m.Value("rejected"); p != int64(admitted) || p+r != int64(tc.offeredRPS*tc.seconds) {
				t.Errorf("passed=%d rejected=%d, admitted %d", p, r, admitted)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	cases := []struct {
		config string
		want   string
	}{
		{`{"rate":1}`, "1"},
		{`{"rate":0.1}`, "10"},
		{`{"rate":1000}`, "1"}, // 1 ms rounds up to 1 s, never 0
		{`{"rate":0.001}`, "1000"},
		{`{"rate":1,"burst":1,"max_delay":"2s"}`, "1"}, // 3rd request: needs 3 s, may wait 2
	}
	for _, tc := range cases {
		t.Run(tc.config, func(t *testing.T) {
			clock := newFakeClock()
			c, _ := parse(t, tc.config, clock)
			var last decision
			for i := 0; i < 10; i++ {
				if last = c.rt.take("k"); !last.ok {
					break
				}
			}
			if last.ok {
				t.Fatal("never rejected")
			}
			if got := retryAfterHeader(last.retryAfter); got != tc.want {
				t.Fatalf("Retry-After %q (from %v), want %q", got, last.retryAfter, tc.want)
			}
		})
	}
}

func TestRejectReply(t *testing.T) {
	c, m := parse(t, `{"rate":1,"status":503,"message":"slow down"}`, newFakeClock())
	f := filterOf(c)
	ctx := newCtx("192.0.2.1:1", newReq())
	if got := send(t, f, ctx); got != 0 {
		t.Fatalf("first request: %d", got)
	}
	if got := send(t, f, ctx); got != 503 {
		t.Fatalf("second request: %d, want 503", got)
	}
	if ra, _ := ctx.Replied.Headers.Get("retry-after"); ra != "1" || ctx.Replied.Body != "slow down" {
		t.Fatalf("reply %+v", ctx.Replied)
	}
	if m.Value("rejected") != 1 || m.Value("passed") != 1 {
		t.Fatalf("metrics %v", m.Values())
	}
}

func TestKeys(t *testing.T) {
	cases := []struct {
		name     string
		config   string
		reqs     []*fakeframework.Context
		want     []int
		counters map[string]int64
	}{
		{
			name:   "remote_addr ignores the port",
			config: `{"rate":1}`,
			reqs:   []*fakeframework.Context{newCtx("192.0.2.1:1000", newReq()), newCtx("192.0.2.1:2000", newReq()), newCtx("[2001:db8::1]:3000", newReq()), newCtx("[2001:db8::1]:3001", newReq())},
			want:   []int{0, 429, 0, 429},
		},
		{
			// The framework's $remote_addr has no port, in any template.
			name:   "remote_addr inside a template ignores the port",
			config: `{"rate":1,"key":"ip=$remote_addr"}`,
			reqs:   []*fakeframework.Context{newCtx("192.0.2.1:1000", newReq()), newCtx("192.0.2.1:2000", newReq()), newCtx("[::1]:3000", newReq()), newCtx("[::1]:3001", newReq())},
			want:   []int{0, 429, 0, 429},
		},
		{
			name:   "header key: separate buckets",
			config: `{"rate":1,"key":"$header_x-user"}`,
			reqs:   []*fakeframework.Context{newCtx("1.1.1.1:1", newReq("x-user", "a")), newCtx("1.1.1.1:1", newReq("x-user", "b")), newCtx("1.1.1.1:1", newReq("x-user", "a"))},
			want:   []int{0, 0, 429},
		},
		{
			name:     "empty key shared by default",
			config:   `{"rate":1,"key":"$header_x-user"}`,
			reqs:     []*fakeframework.Context{newCtx("1.1.1.1:1", newReq()), newCtx("2.2.2.2:1", newReq())},
			want:     []int{0, 429},
			counters: map[string]int64{"passed": 1, "rejected": 1},
		},
		{
			name:     "empty key rejected",
			config:   `{"rate":100,"key":"$header_x-user","empty_key":"reject"}`,
			reqs:     []*fakeframework.Context{newCtx("1.1.1.1:1", newReq()), newCtx("1.1.1.1:1", newReq("x-user", "a"))},
			want:     []int{400, 0},
			counters: map[string]int64{"rejected_empty_key": 1, "passed": 1},
		},
		{
			name:   "consumer key",
			config: `{"rate":1,"key":"$consumer"}`,
			reqs: func() []*fakeframework.Context {
				a, b, a2 := newCtx("1.1.1.1:1", newReq()), newCtx("1.1.1.1:1", newReq()), newCtx("1.1.1.1:1", newReq())
				a.SetConsumer(&api.Consumer{Name: "alice"})
				b.SetConsumer(&api.Consumer{Name: "bob"})
				a2.SetConsumer(&api.Consumer{Name: "alice"})
				return []*fakeframework.Context{a, b, a2}
			}(),
			want: []int{0, 0, 429},
		},
		{
			name:   "composite key",
			config: `{"rate":1,"key":"$method:$header_x-user"}`,
			reqs: func() []*fakeframework.Context {
				g, p := newCtx("1.1.1.1:1", newReq("x-user", "a")), newCtx("1.1.1.1:1", newReq("x-user", "a"))
				_ = p.Req.SetMethod("POST")
				return []*fakeframework.Context{g, p, g}
			}(),
			want: []int{0, 0, 429},
		},
		{
			name:   "CRLF and unicode keys are just keys",
			config: `{"rate":1,"key":"$header_x-user"}`,
			reqs:   []*fakeframework.Context{newCtx("1:1", newReq("x-user", "a\r\nb")), newCtx("1:1", newReq("x-user", "ä")), newCtx("1:1", newReq("x-user", "a\r\nb"))},
			want:   []int{0, 0, 429},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, m := parse(t, tc.config, newFakeClock())
			f := filterOf(c)
			for i, ctx := range tc.reqs {
				if got := send(t, f, ctx); got != tc.want[i] {
					t.Fatalf("request %d: got %d, want %d", i, got, tc.want[i])
				}
			}
			for k, v := range tc.counters {
				if got := m.Value(k); got != v {
					t.Errorf("%s = %d, want %d", k, got, v)
				}
			}
		})
	}
}

func TestDelayQueue(t *testing.T) {
	clock := newFakeClock()
	c, _ := parse(t, `{"rate":10,"burst":1,"max_delay":"500ms"}`, clock)
	// At a frozen instant: the first passes, the next five wait 100..500 ms,
	// the seventh would wait 600 ms and is rejected.
	for i := 0; i < 7; i++ {
		d := c.rt.take("k")
		want := time.Duration(i) * 100 * time.Millisecond
		switch {
		case i < 6 && (!d.ok || (d.wait-want).Abs() > time.Millisecond):
			t.Fatalf("request %d: %+v, want admitted after %v", i, d, want)
		case i == 6 && (d.ok || d.retryAfter <= 0):
			t.Fatalf("request %d: %+v, want rejected", i, d)
		}
	}
	// A rejected request does not take a place in the queue: after 100 ms one
	// more fits (wait 500 ms again).
	clock.Advance(100 * time.Millisecond)
	if d := c.rt.take("k"); !d.ok || (d.wait-500*time.Millisecond).Abs() > time.Millisecond {
		t.Fatalf("after 100ms: %+v", d)
	}
}

func TestDelayedRequestWaitsThenPasses(t *testing.T) {
	c, m := parse(t, `{"rate":20,"burst":1,"max_delay":"1s"}`, nil) // real clock
	f := filterOf(c)
	ctx := newCtx("192.0.2.1:1", newReq())
	start := time.Now()
	for i := 0; i < 3; i++ {
		if got := send(t, f, ctx); got != 0 {
			t.Fatalf("request %d: %d", i, got)
		}
	}
	// 2 requests waited ~50 ms each after the first.
	if el := time.Since(start); el < 90*time.Millisecond || el > 2*time.Second {
		t.Fatalf("3 requests at 20 rps took %v, want ~100ms", el)
	}
	if m.Value("delayed") != 2 || m.Value("passed") != 3 {
		t.Fatalf("metrics %v", m.Values())
	}
}

func TestDelayedRequestCancelledGivesTokenBack(t *testing.T) {
	clock := newFakeClock()
	c, m := parse(t, `{"rate":1,"burst":1,"max_delay":"10s"}`, clock)
	f := filterOf(c)
	if got := send(t, f, newCtx("1.1.1.1:1", newReq())); got != 0 {
		t.Fatal(got)
	}
	cctx, cancel := context.WithCancel(context.Background())
	ctx := newCtx("1.1.1.1:1", newReq())
	ctx.Context = cctx
	done := make(chan int)
	go func() { done <- send(t, f, ctx) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("cancelled request still waiting")
	}
	if m.Value("passed") != 1 {
		t.Fatalf("a cancelled request was counted as passed: %v", m.Values())
	}
	// The cancelled reservation was returned: the next request waits ~1 s, not 2 s.
	if d := c.rt.take("1.1.1.1"); !d.ok || d.wait > 1100*time.Millisecond {
		t.Fatalf("after cancel: %+v", d)
	}
}

func TestNeedsBlockOnlyWithDelay(t *testing.T) {
	c, _ := parse(t, `{"rate":1}`, nil)
	if c.Needs().MayBlock != 0 {
		t.Fatal("no delay: must not declare MayBlock")
	}
	c, _ = parse(t, `{"rate":1,"max_delay":"100ms"}`, nil)
	if c.Needs().MayBlock&api.BlockReceive == 0 {
		t.Fatal("with delay: must declare BlockReceive")
	}
}

// TestConcurrentSameKey hammers one bucket from many goroutines at a frozen
// instant: exactly burst requests may pass.
func TestConcurrentSameKey(t *testing.T) {
	clock := newFakeClock()
	c, m := parse(t, `{"rate":1,"burst":100}`, clock)
	f := filterOf(c)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				ctx := newCtx(fmt.Sprintf("10.0.0.%d:%d", i%2, g), newReq())
				f.OnReceive(ctx, ctx.Req, nil, nil)
			}
		}()
	}
	wg.Wait()
	if p := m.Value("passed"); p != 200 { // 2 keys x burst 100
		t.Fatalf("passed %d, want 200", p)
	}
}

// TestKeyFloodKeepsMemoryBounded sends one million distinct keys: the cache
// stays at max_keys and the heap does not grow with the number of keys.
func TestKeyFloodKeepsMemoryBounded(t *testing.T) {
	keys := 1_000_000
	if testing.Short() {
		keys = 100_000
	}
	c, m := parse(t, `{"rate":10,"key":"$header_x-user","max_keys":10000}`, newFakeClock())
	f := filterOf(c)
	req := newReq()
	ctx := newCtx("1.1.1.1:1", req)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	buf := make([]byte, 0, 32)
	for i := 0; i < keys; i++ {
		buf = fmt.Appendf(buf[:0], "user-%d", i)
		req.Headers["x-user"] = []string{string(buf)}
		if got := send(t, f, ctx); got != 0 {
			t.Fatalf("key %d rejected", i)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	held := c.rt.cache.len()
	t.Logf("%d distinct keys: %d held, %d evicted, heap growth %.1f MiB", keys, held, m.Value("evicted_keys"), float64(growth)/(1<<20))
	if held > 10000 {
		t.Errorf("cache holds %d keys, cap 10000", held)
	}
	if m.Value("keys") != int64(held) || m.Value("evicted_keys") != int64(keys-held) {
		t.Errorf("keys gauge %d, evicted %d; held %d", m.Value("keys"), m.Value("evicted_keys"), held)
	}
	// ~10k buckets cost a few MiB; a million would cost hundreds.
	if growth > 32<<20 {
		t.Errorf("heap grew by %d bytes for a capped cache", growth)
	}
	// The most recent key is still limited (it was not evicted at once).
	if got := send(t, f, ctx); got != 0 {
		// rate 10, burst 1: the same key again at the same instant is limited
		t.Logf("last key limited as expected (%d)", got)
	} else {
		t.Errorf("last key was admitted twice at the same instant: its bucket was lost")
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	cases := []struct{ name, config, field, reason string }{
		{"rate missing", `{}`, "rate", "> 0"},
		{"negative rate", `{"rate":-1}`, "rate", "> 0"},
		{"burst 0", `{"rate":1,"burst":0}`, "burst", "between 1"},
		{"unknown variable", `{"rate":1,"key":"$nope"}`, "key", "unknown variable"},
		{"empty key template", `{"rate":1,"key":""}`, "key", "template"},
		{"bad empty_key", `{"rate":1,"empty_key":"drop"}`, "empty_key", "must be"},
		{"bad delay", `{"rate":1,"max_delay":"soon"}`, "max_delay", "invalid duration \"soon\""},
		{"delay too long", `{"rate":1,"max_delay":"2h"}`, "max_delay", "between 0"},
		{"max_keys 0", `{"rate":1,"max_keys":0}`, "max_keys", "between 1"},
		{"bad status", `{"rate":1,"status":200}`, "status", "4xx or 5xx"},
		{"unknown field", `{"rate":1,"nodelay":true}`, "nodelay", "unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}

func TestDestroyReleasesKeysGauge(t *testing.T) {
	c, m := parse(t, `{"rate":1,"key":"$header_x-user"}`, newFakeClock())
	f := filterOf(c)
	for _, u := range []string{"a", "b", "c"} {
		send(t, f, newCtx("1:1", newReq("x-user", u)))
	}
	if m.Value("keys") != 3 {
		t.Fatalf("keys = %d, want 3", m.Value("keys"))
	}
	c.Destroy()
	if m.Value("keys") != 0 {
		t.Fatalf("keys after Destroy = %d, want 0", m.Value("keys"))
	}
}
