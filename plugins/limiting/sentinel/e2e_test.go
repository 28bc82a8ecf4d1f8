package sentinel

import (
	"io"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// End-to-end tests: real HTTP through moe-host running out/libgolang.so, to the
// hosttest echo upstream (/status/<code>, /delay/<ms>).

var e2eClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256},
}

func get(t *testing.T, url string, kv ...string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := e2eClient.Do(req)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return 0, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

func sentinelChain(cfg map[string]any) []hosttest.Plugin {
	return []hosttest.Plugin{{Name: "sentinel", Config: cfg}}
}

// load offers rps requests per second to url for warm+d (each request in its
// own goroutine, so slow answers do not slow the offered rate) and returns the
// admitted (200) rate during d.
func offerHTTP(t *testing.T, url string, rps int, warm, d time.Duration) float64 {
	t.Helper()
	var admitted, other atomic.Int64
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rps))
	defer tick.Stop()
	start := time.Now()
	var measureStart time.Time
	for time.Since(start) < warm+d {
		<-tick.C
		counted := time.Since(start) >= warm
		if counted && measureStart.IsZero() {
			measureStart = time.Now()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := get(t, url)
			switch {
			case code == 200 && counted:
				admitted.Add(1)
			case code != 200 && code != 429:
				other.Add(1)
			}
		}()
	}
	elapsed := time.Since(measureStart)
	wg.Wait()
	if other.Load() > 0 {
		t.Errorf("%s: %d answers neither 200 nor 429", url, other.Load())
	}
	return float64(admitted.Load()) / elapsed.Seconds()
}

func TestE2EAdmittedRate(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: sentinelChain(map[string]any{
		"flow": []any{map[string]any{"threshold": 50}},
	})})
	rate := offerHTTP(t, h.URL+"/", 200, time.Second, 3*time.Second)
	t.Logf("e2e: offered 200 rps to a 50 qps rule: admitted %.1f/s over 3 s of steady state", rate)
	if math.Abs(rate-50) > 5 {
		t.Errorf("admitted %.1f/s, want 50 ±10%%", rate)
	}
	if n := h.Counter(t, "moe_sentinel_res_default_blocked_flow"); n == 0 {
		t.Errorf("moe_sentinel_res_default_blocked_flow = 0; stats: %v", grepStats(h.Stats(t)))
	}
}

func grepStats(all map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range all {
		if strings.Contains(k, "sentinel") {
			out[k] = v
		}
	}
	return out
}

// TestE2ETwoRoutesKeepTheirOwnLimits: the filter-level config and the /special
// route's config are two configs alive at once in one process; each admits its
// own rate (sentinel's process-wide rule lists must not let one overwrite the
// other).
func TestE2ETwoRoutesKeepTheirOwnLimits(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{
		Plugins: sentinelChain(map[string]any{"flow": []any{map[string]any{"threshold": 40}}}),
		RoutePlugins: sentinelChain(map[string]any{
			"flow": []any{map[string]any{"threshold": 10}},
		}),
	})
	var def, special float64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); def = offerHTTP(t, h.URL+"/", 100, time.Second, 2*time.Second) }()
	go func() { defer wg.Done(); special = offerHTTP(t, h.URL+"/special/x", 100, time.Second, 2*time.Second) }()
	wg.Wait()
	t.Logf("e2e: default route (40 qps rule) admitted %.1f/s, /special (10 qps rule) admitted %.1f/s", def, special)
	if math.Abs(def-40) > 4 {
		t.Errorf("default route admitted %.1f/s, want 40 ±10%%", def)
	}
	if math.Abs(special-10) > 1.5 {
		t.Errorf("/special admitted %.1f/s, want 10 ±15%%", special)
	}
	// The load above may have ended just before a new 1 s window opened, so one request could
	// pass; 25 back-to-back requests exceed 10 per window even if they straddle a boundary.
	blocked := false
	for i := 0; i < 25 && !blocked; i++ {
		code, hdr := get(t, h.URL+"/special/x")
		if code == 429 {
			if got := hdr.Get("x-moe-sentinel-blocked"); got != "flow" {
				t.Fatalf("blocked /special: x-moe-sentinel-blocked = %q, want flow", got)
			}
			blocked = true
		}
	}
	if !blocked {
		t.Errorf("25 back-to-back requests to /special (10 qps rule) were all admitted")
	}
}

func waitCounter(t *testing.T, h *hosttest.Host, name string, min int64) {
	t.Helper()
	if !tb.Poll(2*time.Second, func() bool { return h.Counter(t, name) >= min }) {
		t.Fatalf("%s = %d, want >= %d; stats: %v", name, h.Counter(t, name), min, grepStats(h.Stats(t)))
	}
}

// TestE2EErrorRatioBreaker drives 5xx answers from the upstream and checks
// closed -> open -> half-open -> open (failed probe) -> half-open -> closed.
func TestE2EErrorRatioBreaker(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: sentinelChain(map[string]any{
		"circuit_breakers": []any{map[string]any{
			"strategy": "error_ratio", "threshold": 0.5, "min_request_amount": 4,
			"stat_interval": "10s", "retry_timeout": "500ms",
		}},
	})})
	for i := 0; i < 4; i++ {
		if code, _ := get(t, h.URL+"/status/500"); code != 500 {
			t.Fatalf("request %d while closed: %d", i, code)
		}
	}
	waitCounter(t, h, "moe_sentinel_breaker_to_open", 1)
	code, hdr := get(t, h.URL+"/status/200")
	if code != 503 || hdr.Get("x-moe-sentinel-blocked") != "circuit-breaker" {
		t.Fatalf("open breaker: %d %q", code, hdr.Get("x-moe-sentinel-blocked"))
	}
	time.Sleep(600 * time.Millisecond)
	// Half-open: one probe goes through; it fails, so the breaker opens again.
	if code, _ := get(t, h.URL+"/status/502"); code != 502 {
		t.Fatalf("probe: %d", code)
	}
	waitCounter(t, h, "moe_sentinel_breaker_to_half_open", 1)
	waitCounter(t, h, "moe_sentinel_breaker_to_open", 2)
	if code, _ := get(t, h.URL+"/status/200"); code != 503 {
		t.Fatalf("after a failed probe: %d, want 503", code)
	}
	time.Sleep(600 * time.Millisecond)
	// A good probe closes it.
	if code, _ := get(t, h.URL+"/status/200"); code != 200 {
		t.Fatalf("second probe: %d", code)
	}
	waitCounter(t, h, "moe_sentinel_breaker_to_half_open", 2)
	waitCounter(t, h, "moe_sentinel_breaker_to_closed", 1)
	for i := 0; i < 3; i++ {
		if code, _ := get(t, h.URL+"/status/200"); code != 200 {
			t.Fatalf("after closing: %d", code)
		}
	}
	if n := h.Counter(t, "moe_sentinel_res_default_blocked_circuit_breaker"); n < 2 {
		t.Errorf("blocked_circuit_breaker = %d, want >= 2", n)
	}
}

// TestE2ESlowRequestBreaker drives slow answers (/delay) and checks that the
// response time measured from the request to the response headers opens the
// breaker, and that a fast probe closes it.
func TestE2ESlowRequestBreaker(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: sentinelChain(map[string]any{
		"circuit_breakers": []any{map[string]any{
			"strategy": "slow_request_ratio", "threshold": 0.5, "max_allowed_rt": "50ms",
			"min_request_amount": 3, "stat_interval": "10s", "retry_timeout": "500ms",
		}},
	})})
	for i := 0; i < 3; i++ {
		if code, _ := get(t, h.URL+"/delay/120"); code != 200 {
			t.Fatalf("slow request %d: %d", i, code)
		}
	}
	waitCounter(t, h, "moe_sentinel_breaker_to_open", 1)
	if code, hdr := get(t, h.URL+"/"); code != 503 || hdr.Get("x-moe-sentinel-blocked") != "circuit-breaker" {
		t.Fatalf("open breaker: %d %q", code, hdr.Get("x-moe-sentinel-blocked"))
	}
	time.Sleep(600 * time.Millisecond)
	if code, _ := get(t, h.URL+"/delay/120"); code != 200 { // slow probe: opens again
		t.Fatalf("slow probe: %d", code)
	}
	waitCounter(t, h, "moe_sentinel_breaker_to_open", 2)
	time.Sleep(600 * time.Millisecond)
	if code, _ := get(t, h.URL+"/"); code != 200 { // fast probe: closes
		t.Fatalf("fast probe: %d", code)
	}
	waitCounter(t, h, "moe_sentinel_breaker_to_closed", 1)
	if code, _ := get(t, h.URL+"/"); code != 200 {
		t.Fatalf("after closing: %d", code)
	}
}

// TestE2EConcurrencyLimit holds slow requests open and checks that only
// max_concurrency of them are admitted at once, and that aborted requests give
// their slot back.
func TestE2EConcurrencyLimit(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: sentinelChain(map[string]any{
		"isolation": []any{map[string]any{"max_concurrency": 2}},
	})})
	var wg sync.WaitGroup
	var ok, blocked atomic.Int32
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, hdr := get(t, h.URL+"/delay/400")
			switch {
			case code == 200:
				ok.Add(1)
			case code == 429 && hdr.Get("x-moe-sentinel-blocked") == "isolation":
				blocked.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 2 || blocked.Load() != 4 {
		t.Fatalf("6 concurrent slow requests, limit 2: %d admitted, %d blocked", ok.Load(), blocked.Load())
	}
	// Clients that give up: their entries must be exited (slots freed).
	short := &http.Client{Timeout: 100 * time.Millisecond}
	for i := 0; i < 2; i++ {
		if resp, err := short.Get(h.URL + "/delay/2000"); err == nil {
			resp.Body.Close()
		}
	}
	if !tb.Poll(3*time.Second, func() bool { return h.Counter(t, "moe_sentinel_inflight") == 0 }) {
		t.Fatalf("inflight = %d after aborted requests", h.Counter(t, "moe_sentinel_inflight"))
	}
	if code, _ := get(t, h.URL+"/"); code != 200 {
		t.Fatalf("after aborts: %d", code)
	}
}

// TestE2EThrottlingDoesNotBlockTheWorker: requests queued by a throttling rule
// wait off Envoy's worker thread, so other requests are served meanwhile.
func TestE2EThrottlingDoesNotBlockTheWorker(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{},
		RoutePlugins: sentinelChain(map[string]any{
			"flow": []any{map[string]any{"threshold": 5, "behavior": "throttling", "max_queueing_time": "2s"}},
		}),
	})
	var wg sync.WaitGroup
	var ok atomic.Int32
	start := time.Now()
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _ := get(t, h.URL+"/special/q"); code == 200 {
				ok.Add(1)
			}
		}()
	}
	time.Sleep(150 * time.Millisecond)
	var worst time.Duration
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		if code, _ := get(t, h.URL+"/"); code != 200 {
			t.Errorf("default route: %d", code)
		}
		if d := time.Since(t0); d > worst {
			worst = d
		}
	}
	wg.Wait()
	el := time.Since(start)
	t.Logf("6 throttled requests at 5 qps took %v; default route worst latency meanwhile %v", el, worst)
	if ok.Load() != 6 {
		t.Errorf("%d of 6 queued requests admitted, want all (max wait 2s)", ok.Load())
	}
	if el < 800*time.Millisecond {
		t.Errorf("6 requests at 5 qps done in %v: not paced", el)
	}
	if worst > 300*time.Millisecond {
		t.Errorf("default route took %v while requests were queued: worker blocked?", worst)
	}
}

func TestE2EPressureTrafficHasItsOwnLimit(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: sentinelChain(map[string]any{
		"flow":          []any{map[string]any{"threshold": 10}},
		"pressure_test": map[string]any{"flow": []any{map[string]any{"threshold": 3}}},
	})})
	count := func(n int, kv ...string) int {
		c := 0
		for i := 0; i < n; i++ {
			if code, _ := get(t, h.URL+"/", kv...); code == 200 {
				c++
			}
		}
		return c
	}
	if got := count(6, "x-pressure-test", "true"); got != 3 {
		t.Errorf("pressure admitted %d of 6, want 3", got)
	}
	if got := count(12); got != 10 {
		t.Errorf("normal admitted %d of 12, want 10", got)
	}
}

func TestE2EBadConfigIsRejected(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{Plugins: sentinelChain(map[string]any{
		"flow": []any{map[string]any{"threshold": 0}},
	})})
	for _, want := range []string{"sentinel", "flow[0].threshold", "must be > 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("host output does not name %q:\n%s", want, out)
		}
	}
}

// TestE2EExample runs envoy/examples/sentinel.yaml (moe-host validates it
// with moectl at start) and replays the requests listed in its header.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/sentinel.yaml")
	codes := func(n int, path string, kv ...string) map[int]int {
		m := map[int]int{}
		for i := 0; i < n; i++ {
			code, _ := get(t, h.URL+path, kv...)
			m[code]++
		}
		return m
	}
	if got := codes(30, "/"); got[200] < 18 || got[200] > 22 || got[429] == 0 {
		t.Errorf("30 quick requests at 20 qps: %v", got)
	}
	if got := codes(8, "/", "x-pressure-test", "true"); got[200] != 5 || got[429] != 3 {
		t.Errorf("pressure requests: %v, want 5 x 200, 3 x 429", got)
	}
	if got := codes(4, "/api/x", "x-user", "alice"); got[200] != 2 || got[429] != 2 {
		t.Errorf("alice on /api: %v, want 2 x 200, 2 x 429", got)
	}
	if got := codes(4, "/api/x", "x-user", "vip"); got[200] != 4 {
		t.Errorf("vip on /api: %v, want 4 x 200", got)
	}
	time.Sleep(1100 * time.Millisecond) // a new flow window for the breaker demo
	got := codes(6, "/status/500")
	if got[500] != 5 || got[503] != 1 {
		t.Errorf("6 x /status/500: %v, want 5 x 500 then 503", got)
	}
}

// TestExampleValidatesWithMoectl checks the example bootstrap against Envoy's
// protos offline (TestE2EExample checks the plugin config by serving it).
func TestExampleValidatesWithMoectl(t *testing.T) {
	moectl := hosttest.Require(t, "moectl")
	out, err := exec.Command(moectl, "validate", "-c", filepath.Join("..", "..", "..", "envoy", "examples", "sentinel.yaml"), "-skip-library-check").CombinedOutput()
	if err != nil {
		t.Fatalf("moectl validate: %v\n%s", err, out)
	}
}
