package limitcount

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// End-to-end tests: real HTTP through moe-host running out/libgolang.so, with
// a real redis-server started by the test.

func e2eConfig(r *redisServer, kv ...any) map[string]any {
	c := map[string]any{"count": 3, "time_window": "10s", "key": "$header_x-user",
		"redis": map[string]any{"addrs": []string{r.Addr()}}}
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i].(string)] = kv[i+1]
	}
	return c
}

func TestE2ELimitAndQuotaHeaders(t *testing.T) {
	r := startRedis(t)
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: []hosttest.Plugin{{Name: Name, Config: e2eConfig(r)}}})
	c := http.DefaultClient
	for i := 0; i < 3; i++ {
		code, hdr, _ := hosttest.Fetch(t, c, h.URL+"/", "x-user", "alice")
		if code != 200 || hdr.Get("X-RateLimit-Limit") != "3" || hdr.Get("X-RateLimit-Remaining") != string(rune('2'-i)) ||
			hdr.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("request %d: %d %v", i, code, hdr)
		}
	}
	code, hdr, body := hosttest.Fetch(t, c, h.URL+"/", "x-user", "alice")
	if code != 429 || body != "Too Many Requests" || hdr.Get("Retry-After") == "" || hdr.Get("X-RateLimit-Remaining") != "0" ||
		hdr.Get("X-RateLimit-Limit") != "3" {
		t.Fatalf("4th: %d %q %v", code, body, hdr)
	}
	if code, _, _ := hosttest.Fetch(t, c, h.URL+"/", "x-user", "bob"); code != 200 {
		t.Fatalf("another user: %d", code)
	}
	if p, rj := h.Counter(t, "moe_limit_count_passed"), h.Counter(t, "moe_limit_count_rejected"); p != 4 || rj != 1 {
		t.Errorf("stats passed %d rejected %d, want 4 and 1", p, rj)
	}
}

// TestE2ETwoInstancesShareOneCounter runs two moe-host processes (two
// "Envoy instances") against one Redis.
func TestE2ETwoInstancesShareOneCounter(t *testing.T) {
	r := startRedis(t)
	cfg := e2eConfig(r, "count", 6)
	a := hosttest.StartChain(t, hosttest.Chain{Plugins: []hosttest.Plugin{{Name: Name, Config: cfg}}})
	b := hosttest.StartChain(t, hosttest.Chain{Plugins: []hosttest.Plugin{{Name: Name, Config: cfg}}})
	codes := map[string]map[int]int{a.URL: {}, b.URL: {}}
	for i := 0; i < 12; i++ {
		u := a.URL
		if i%2 == 1 {
			u = b.URL
		}
		code, _, _ := hosttest.Fetch(t, http.DefaultClient, u+"/", "x-user", "shared")
		codes[u][code]++
	}
	if codes[a.URL][200]+codes[b.URL][200] != 6 || codes[a.URL][200] == 0 || codes[b.URL][200] == 0 {
		t.Fatalf("12 requests over two instances against count 6: %v", codes)
	}
}

func TestE2ERedisOutageAndRecovery(t *testing.T) {
	r := startRedis(t)
	h := hosttest.StartChain(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{{Name: Name, Config: e2eConfig(r, "count", 100)}},
		// /special fails closed.
		RoutePlugins: []hosttest.Plugin{{Name: Name, Config: e2eConfig(r, "count", 100, "failure_policy", "fail_closed")}},
	})
	c := http.DefaultClient
	for _, p := range []string{"/", "/special"} {
		if code, _, _ := hosttest.Fetch(t, c, h.URL+p, "x-user", "u"); code != 200 {
			t.Fatalf("%s before the outage: %d", p, code)
		}
	}
	r.Stop()
	start := time.Now()
	if code, hdr, _ := hosttest.Fetch(t, c, h.URL+"/", "x-user", "u"); code != 200 || hdr.Get("X-RateLimit-Limit") != "" {
		t.Errorf("fail_open during the outage: %d %v", code, hdr)
	}
	if code, _, body := hosttest.Fetch(t, c, h.URL+"/special", "x-user", "u"); code != 503 || body != "rate limit service unavailable" {
		t.Errorf("fail_closed during the outage: %d %q", code, body)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("two requests took %v with Redis down", d)
	}
	r.Start()
	var code int
	var hdr http.Header
	if !tb.Poll(10*time.Second, func() bool {
		code, hdr, _ = hosttest.Fetch(t, c, h.URL+"/special", "x-user", "u")
		return code == 200 && hdr.Get("X-RateLimit-Remaining") == "99"
	}) {
		t.Fatalf("not recovered 10s after Redis restarted: %d %v", code, hdr)
	}
	if n := h.Counter(t, "moe_limit_count_failure_passed"); n != 1 {
		t.Errorf("failure_passed %d, want 1", n)
	}
	if n := h.Counter(t, "moe_limit_count_failure_rejected"); n < 1 {
		t.Errorf("failure_rejected %d", n)
	}
}

// TestE2EAccuracy offers 200 rps for 5 s to each route of one moe-host: the
// filter-level config counts in fixed windows, /special in sliding ones, both
// 50 per 1 s window. Admitted rates must be within 10% of 50/s.
func TestE2EAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 5 s")
	}
	r := startRedis(t)
	const rps, limit, seconds = 200, 50, 5
	h := hosttest.StartChain(t, hosttest.Chain{
		Plugins:      []hosttest.Plugin{{Name: Name, Config: e2eConfig(r, "count", limit, "time_window", "1s", "key", "$route_name")}},
		RoutePlugins: []hosttest.Plugin{{Name: Name, Config: e2eConfig(r, "count", limit, "time_window", "1s", "key", "$route_name", "window", "sliding")}},
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 5 * time.Second}
	waitForWindowOffset(t, r, 1000, 0, false) // see TestAccuracy
	type result struct {
		at, sent        []time.Duration
		rejected, other int
	}
	results := map[string]*result{}
	done := make(chan string, 2)
	for _, path := range []string{"/", "/special"} {
		res := &result{}
		results[path] = res
		go func() {
			res.at, res.sent, res.rejected, res.other = offer(t, func() int {
				code, _, _ := hosttest.Fetch(t, client, h.URL+path)
				return code
			}, rps, seconds*time.Second)
			done <- path
		}()
	}
	<-done
	<-done
	for path, window := range map[string]string{"/": "fixed", "/special": "sliding"} {
		res := results[path]
		if res.other != 0 {
			t.Errorf("%s: %d answers neither 200 nor 429", window, res.other)
		}
		checkAccuracy(t, "e2e "+window+" window", res.at, res.sent, limit)
	}
}

func TestE2EBadConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		cfg  map[string]any
		want []string
	}{
		{map[string]any{"count": 0, "time_window": "1s", "redis": map[string]any{"addrs": []string{"127.0.0.1:6379"}}},
			[]string{"limit-count", "count", "must be between 1 and"}},
		{map[string]any{"count": 1, "time_window": "1s", "redis": map[string]any{"addrs": []string{"nohost"}}},
			[]string{"limit-count", "redis.addrs[0]", "host:port"}},
		{map[string]any{"count": 1, "time_window": "1s", "failure_policy": "maybe", "redis": map[string]any{"addrs": []string{"127.0.0.1:6379"}}},
			[]string{"limit-count", "failure_policy", "fail_open"}},
	} {
		out := hosttest.StartChainExpectFailure(t, hosttest.Chain{Plugins: []hosttest.Plugin{{Name: Name, Config: tc.cfg}}})
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("host output does not name %q:\n%s", want, out)
			}
		}
	}
}

// TestE2EExample runs envoy/examples/limit-count.yaml (with the test's ports
// and Redis) and replays the requests listed in its header.
func TestE2EExample(t *testing.T) {
	r := startRedis(t)
	h := hosttest.StartExample(t, "envoy/examples/limit-count.yaml", hosttest.ExampleOptions{
		Replace: map[string]string{"127.0.0.1:6379": r.Addr()},
	})
	c := http.DefaultClient
	code, hdr, _ := hosttest.Fetch(t, c, h.URL+"/")
	if code != 200 || hdr.Get("X-RateLimit-Limit") != "10" || hdr.Get("X-RateLimit-Remaining") != "9" || hdr.Get("X-RateLimit-Reset") != "60" {
		t.Fatalf("first: %d %v", code, hdr)
	}
	codes := map[int]int{}
	for i := 0; i < 11; i++ {
		code, _, _ := hosttest.Fetch(t, c, h.URL+"/")
		codes[code]++
	}
	if codes[200] != 9 || codes[429] != 2 {
		t.Errorf("12 requests against 10 per minute: %v", codes)
	}
	var api []int
	for i := 0; i < 4; i++ {
		code, _, _ := hosttest.Fetch(t, c, h.URL+"/api/x", "x-user", "alice")
		api = append(api, code)
	}
	if api[0] != 200 || api[1] != 200 || api[2] != 200 || api[3] != 429 {
		t.Errorf("/api for one user: %v, want 200 200 200 429", api)
	}
	if code, _, _ := hosttest.Fetch(t, c, h.URL+"/api/x"); code != 400 {
		t.Errorf("/api without x-user: %d, want 400", code)
	}
	if v, err := r.Do("EXISTS", "moe:limit-count:{api:alice}:s10000"); err != nil || v.(int64) != 1 {
		t.Errorf("the /api counter is not in Redis: %v %v", v, err)
	}
	r.Stop()
	if code, _, _ := hosttest.Fetch(t, c, h.URL+"/"); code != 200 {
		t.Errorf("/ with Redis down: %d, want 200 (fail_open)", code)
	}
	if code, _, _ := hosttest.Fetch(t, c, h.URL+"/api/x", "x-user", "bob"); code != 503 {
		t.Errorf("/api with Redis down: %d, want 503 (fail_closed)", code)
	}
}

// TestE2ESlowRedisDoesNotBlockTheWorker pauses Redis: requests that wait for
// it run off Envoy's worker threads, so they time out together (not one after
// the other) and a route without the plugin answers at once meanwhile.
func TestE2ESlowRedisDoesNotBlockTheWorker(t *testing.T) {
	r := startRedis(t)
	h := hosttest.StartChain(t, hosttest.Chain{
		Plugins:      []hosttest.Plugin{{Name: Name, Config: e2eConfig(r, "count", 1000, "redis", map[string]any{"addrs": []string{r.Addr()}, "timeout": "300ms"})}},
		RoutePlugins: []hosttest.Plugin{{Name: Name, Disabled: true}},
	})
	// Warm the pool: one connection per worker at least.
	for i := 0; i < 4; i++ {
		hosttest.Fetch(t, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, h.URL+"/", "x-user", "u")
	}
	if _, err := r.Do("CLIENT", "PAUSE", "2000", "ALL"); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	const n = 10
	start := time.Now()
	codes := make(chan int, n)
	for i := 0; i < n; i++ {
		go func() {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			code, _, _ := hosttest.Fetch(t, c, h.URL+"/", "x-user", "u")
			codes <- code
		}()
	}
	time.Sleep(50 * time.Millisecond) // they are now waiting for Redis
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		if code, _, _ := hosttest.Fetch(t, c, h.URL+"/special"); code != 200 {
			t.Errorf("/special: %d", code)
		}
		if d := time.Since(t0); d > 150*time.Millisecond {
			t.Errorf("/special took %v while requests waited for Redis: worker blocked?", d)
		}
	}
	for i := 0; i < n; i++ {
		if code := <-codes; code != 200 {
			t.Errorf("fail_open with Redis paused: %d", code)
		}
	}
	took := time.Since(start)
	t.Logf("%d requests with Redis paused (timeout 300ms) all answered after %v", n, took)
	if took > 1500*time.Millisecond {
		t.Errorf("%d requests took %v with a 300ms timeout: serialized?", n, took)
	}
	if got := h.Counter(t, "moe_limit_count_redis_timeouts"); got < n {
		t.Errorf("redis_timeouts %d, want >= %d", got, n)
	}
}
