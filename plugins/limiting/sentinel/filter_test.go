package sentinel

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/stat"

	"github.com/moeproxy/moe/shared/api"
)

// count runs n requests and returns how many were admitted.
func count(c *Config, n int, mk func() *fakeCtx) (admitted int) {
	for i := 0; i < n; i++ {
		if request(c, mk(), 200, 0) == nil {
			admitted++
		}
	}
	return admitted
}

func TestFlowRuleBlocksWithConfiguredReply(t *testing.T) {
	c, m := load(t, `{"namespace":"flow-reply","flow":[{"threshold":3}],
		"blocked":{"status":418,"body":"slow down ({reason})","header":"x-why"}}`)
	ctx := newCtx("r1")
	for i := 0; i < 3; i++ {
		if r := request(c, ctx, 200, 0); r != nil {
			t.Fatalf("request %d blocked: %+v", i, r)
		}
	}
	r := request(c, ctx, 200, 0)
	if r == nil {
		t.Fatal("4th request within the second admitted")
	}
	if r.Code != 418 || r.Body != "slow down (flow)" {
		t.Errorf("reply %d %q", r.Code, r.Body)
	}
	if v, _ := r.Headers.Get("x-why"); v != "flow" {
		t.Errorf("x-why = %q", v)
	}
	if m.Value("res_r1_passed") != 3 || m.Value("res_r1_blocked_flow") != 1 {
		t.Errorf("metrics: %+v", m.Values())
	}
	if got := m.Value("inflight"); got != 0 {
		t.Errorf("inflight = %d after all requests ended", got)
	}
}

func TestEachRenderedResourceHasItsOwnLimit(t *testing.T) {
	c, _ := load(t, `{"namespace":"per-key","resource":"$route_name:$header_x-user","flow":[{"threshold":2}]}`)
	alice := func() *fakeCtx { return newCtx("r", "x-user", "alice") }
	bob := func() *fakeCtx { return newCtx("r", "x-user", "bob") }
	if got := count(c, 5, alice); got != 2 {
		t.Errorf("alice admitted %d, want 2", got)
	}
	if got := count(c, 5, bob); got != 2 {
		t.Errorf("bob admitted %d, want 2 (must not share alice's budget)", got)
	}
	if _, ok := (*c.rt.space.resources.Load())["r:alice"]; !ok {
		t.Errorf("resource r:alice missing: %v", *c.rt.space.resources.Load())
	}
}

func TestIsolationLimitsConcurrentRequests(t *testing.T) {
	c, m := load(t, `{"namespace":"iso","isolation":[{"max_concurrency":2}]}`)
	ctx := newCtx("r")
	open := []*filter{{rt: c.rt}, {rt: c.rt}}
	for _, f := range open {
		if f.OnReceive(ctx, ctx.Req, nil, nil) != api.Continue {
			t.Fatal("request within the limit blocked")
		}
	}
	r := request(c, newCtx("r"), 200, 0)
	if r == nil || r.Code != 429 {
		t.Fatalf("third concurrent request: %+v", r)
	}
	if v, _ := r.Headers.Get("x-moe-sentinel-blocked"); v != "isolation" {
		t.Errorf("header = %q", v)
	}
	open[0].Append(ctx, resp(200), nil, nil)
	open[0].OnDestroy()
	if r := request(c, newCtx("r"), 200, 0); r != nil {
		t.Fatalf("a slot was freed but the request was blocked: %+v", r)
	}
	open[1].OnDestroy() // aborted: no response
	if m.Value("inflight") != 0 {
		t.Errorf("inflight = %d", m.Value("inflight"))
	}
}

func TestEntriesAreExitedExactlyOnce(t *testing.T) {
	c, m := load(t, `{"namespace":"exit-once","isolation":[{"max_concurrency":1}]}`)
	name := c.rt.space.lookup([]byte("r")).name
	concurrency := func() int32 { return stat.GetResourceNode(name).CurrentConcurrency() }

	t.Run("response then destroy", func(t *testing.T) {
		ctx := newCtx("r")
		f := &filter{rt: c.rt}
		f.OnReceive(ctx, ctx.Req, nil, nil)
		f.Append(ctx, resp(200), nil, nil)
		f.Append(ctx, resp(200), nil, nil) // e.g. a second Append call
		f.OnDestroy()
		if concurrency() != 0 || m.Value("inflight") != 0 {
			t.Fatalf("concurrency %d inflight %d", concurrency(), m.Value("inflight"))
		}
	})
	t.Run("aborted before a response", func(t *testing.T) {
		ctx := newCtx("r")
		f := &filter{rt: c.rt}
		f.OnReceive(ctx, ctx.Req, nil, nil)
		if concurrency() != 1 {
			t.Fatalf("concurrency %d while the request runs", concurrency())
		}
		f.OnDestroy()
		if concurrency() != 0 || m.Value("inflight") != 0 {
			t.Fatalf("concurrency %d inflight %d after abort", concurrency(), m.Value("inflight"))
		}
	})
	t.Run("destroyed while queued in sentinel", func(t *testing.T) {
		// With a throttling rule OnReceive runs in a goroutine; Envoy may destroy
		// the request before sentinel returns the entry.
		ctx := newCtx("r")
		f := &filter{rt: c.rt}
		f.OnDestroy()
		f.OnReceive(ctx, ctx.Req, nil, nil)
		if concurrency() != 0 || m.Value("inflight") != 0 {
			t.Fatalf("concurrency %d inflight %d: late entry not exited", concurrency(), m.Value("inflight"))
		}
	})
	t.Run("racing append and destroy", func(t *testing.T) {
		for i := 0; i < 200; i++ {
			ctx := newCtx("r")
			f := &filter{rt: c.rt}
			f.OnReceive(ctx, ctx.Req, nil, nil)
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); f.Append(ctx, resp(500), nil, nil) }()
			go func() { defer wg.Done(); f.OnDestroy() }()
			wg.Wait()
		}
		if concurrency() != 0 || m.Value("inflight") != 0 {
			t.Fatalf("concurrency %d inflight %d", concurrency(), m.Value("inflight"))
		}
	})
}

// stateRecorder records the last breaker state per resource, from sentinel's
// state change notifications.
type stateRecorder struct {
	mu   sync.Mutex
	last map[string]circuitbreaker.State
}

var recorder = &stateRecorder{last: map[string]circuitbreaker.State{}}

func init() { circuitbreaker.RegisterStateChangeListeners(recorder) }

func (s *stateRecorder) reset() {
	s.mu.Lock()
	s.last = map[string]circuitbreaker.State{}
	s.mu.Unlock()
}

func (s *stateRecorder) set(res string, st circuitbreaker.State) {
	s.mu.Lock()
	s.last[res] = st
	s.mu.Unlock()
}
func (s *stateRecorder) OnTransformToClosed(_ circuitbreaker.State, r circuitbreaker.Rule) {
	s.set(r.Resource, circuitbreaker.Closed)
}
func (s *stateRecorder) OnTransformToOpen(_ circuitbreaker.State, r circuitbreaker.Rule, _ interface{}) {
	s.set(r.Resource, circuitbreaker.Open)
}
func (s *stateRecorder) OnTransformToHalfOpen(_ circuitbreaker.State, r circuitbreaker.Rule) {
	s.set(r.Resource, circuitbreaker.HalfOpen)
}

func breakerState(t *testing.T, c *Config, key string) circuitbreaker.State {
	t.Helper()
	name := c.rt.space.lookup([]byte(key)).name
	if len(circuitbreaker.GetRulesOfResource(name)) == 0 {
		t.Fatalf("no breaker rule for %s", name)
	}
	recorder.mu.Lock()
	defer recorder.mu.Unlock()
	return recorder.last[name] // zero value: Closed
}

func TestErrorRatioBreakerOpensProbesAndCloses(t *testing.T) {
	c, _ := load(t, `{"namespace":"cb-ratio","circuit_breakers":[{"strategy":"error_ratio","threshold":0.5,
		"min_request_amount":4,"retry_timeout":"300ms","stat_interval":"10s"}]}`)
	ctx := func() *fakeCtx { return newCtx("r") }
	for i := 0; i < 4; i++ {
		if r := request(c, ctx(), 502, 0); r != nil {
			t.Fatalf("blocked while closed: %+v", r)
		}
	}
	if s := breakerState(t, c, "r"); s != circuitbreaker.Open {
		t.Fatalf("state after 4 errors = %v, want Open", s.String())
	}
	r := request(c, ctx(), 200, 0)
	if r == nil || r.Code != 503 {
		t.Fatalf("open breaker reply: %+v", r)
	}
	if v, _ := r.Headers.Get("x-moe-sentinel-blocked"); v != "circuit-breaker" {
		t.Errorf("header = %q", v)
	}
	time.Sleep(350 * time.Millisecond)
	// The first request after retry_timeout is the probe; while it runs the
	// breaker is half-open and other requests are refused.
	probe := &filter{rt: c.rt}
	pctx := ctx()
	if probe.OnReceive(pctx, pctx.Req, nil, nil) != api.Continue {
		t.Fatal("probe blocked")
	}
	if s := breakerState(t, c, "r"); s != circuitbreaker.HalfOpen {
		t.Fatalf("state during probe = %v, want HalfOpen", s.String())
	}
	if r := request(c, ctx(), 200, 0); r == nil {
		t.Fatal("second request admitted while half-open")
	}
	probe.Append(pctx, resp(200), nil, nil)
	probe.OnDestroy()
	if s := breakerState(t, c, "r"); s != circuitbreaker.Closed {
		t.Fatalf("state after a good probe = %v, want Closed", s.String())
	}
	if r := request(c, ctx(), 200, 0); r != nil {
		t.Fatalf("blocked after closing: %+v", r)
	}
}

func TestFailedProbeReopensBreaker(t *testing.T) {
	c, _ := load(t, `{"namespace":"cb-count","circuit_breakers":[{"strategy":"error_count","threshold":3,
		"min_request_amount":1,"retry_timeout":"200ms","stat_interval":"10s"}], "error_statuses":[429]}`)
	for i := 0; i < 3; i++ {
		request(c, newCtx("r"), 429, 0)
	}
	if s := breakerState(t, c, "r"); s != circuitbreaker.Open {
		t.Fatalf("state = %v, want Open (429 is configured as an error)", s.String())
	}
	time.Sleep(250 * time.Millisecond)
	if r := request(c, newCtx("r"), 500, 0); r != nil {
		t.Fatalf("probe blocked: %+v", r)
	}
	if s := breakerState(t, c, "r"); s != circuitbreaker.Open {
		t.Fatalf("state after a failed probe = %v, want Open", s.String())
	}
}

func TestSlowRequestBreakerUsesResponseTime(t *testing.T) {
	c, _ := load(t, `{"namespace":"cb-slow","circuit_breakers":[{"strategy":"slow_request_ratio","threshold":0.5,
		"max_allowed_rt":"20ms","min_request_amount":2,"retry_timeout":"5s","stat_interval":"10s"}]}`)
	request(c, newCtx("r"), 200, 0)
	if s := breakerState(t, c, "r"); s != circuitbreaker.Closed {
		t.Fatalf("state = %v", s.String())
	}
	request(c, newCtx("r"), 200, 40*time.Millisecond)
	request(c, newCtx("r"), 200, 40*time.Millisecond)
	if s := breakerState(t, c, "r"); s != circuitbreaker.Open {
		t.Fatalf("state after slow responses = %v, want Open", s.String())
	}
}

func TestHotspotLimitsPerValueWithOverrides(t *testing.T) {
	c, m := load(t, `{"namespace":"hot","hotspot":[{"key":"$header_x-user","threshold":2,"overrides":{"vip":5,"banned":0}}]}`)
	user := func(u string) func() *fakeCtx { return func() *fakeCtx { return newCtx("r", "x-user", u) } }
	if got := count(c, 10, user("alice")); got != 2 {
		t.Errorf("alice admitted %d, want 2", got)
	}
	if got := count(c, 10, user("bob")); got != 2 {
		t.Errorf("bob admitted %d, want 2", got)
	}
	if got := count(c, 10, user("vip")); got != 5 {
		t.Errorf("vip admitted %d, want 5 (override)", got)
	}
	if got := count(c, 3, user("banned")); got != 0 {
		t.Errorf("banned admitted %d, want 0", got)
	}
	if got := count(c, 10, func() *fakeCtx { return newCtx("r") }); got != 10 {
		t.Errorf("requests without the key admitted %d, want all 10", got)
	}
	r := request(c, user("alice")(), 200, 0)
	if v, _ := r.Headers.Get("x-moe-sentinel-blocked"); v != "hotspot" {
		t.Errorf("header = %q", v)
	}
	if m.Value("res_r_blocked_hotspot") == 0 {
		t.Error("hotspot blocks not counted")
	}
}

func TestPressureTrafficHasItsOwnLimits(t *testing.T) {
	c, m := load(t, `{"namespace":"pressure","flow":[{"threshold":5}],
		"pressure_test":{"flow":[{"threshold":2}]}}`)
	pressure := func() *fakeCtx { return newCtx("r", "x-pressure-test", "true") }
	normal := func() *fakeCtx { return newCtx("r") }
	if got := count(c, 10, pressure); got != 2 {
		t.Errorf("pressure admitted %d, want 2", got)
	}
	if got := count(c, 10, normal); got != 5 {
		t.Errorf("normal admitted %d, want 5 (pressure traffic must not use its budget)", got)
	}
	if m.Value("res_r_pressure_passed") != 2 || m.Value("res_r_pressure_blocked_flow") != 8 {
		t.Errorf("pressure metrics: passed %d blocked %d", m.Value("res_r_pressure_passed"), m.Value("res_r_pressure_blocked_flow"))
	}
}

func TestPressureTrafficIsShedFirstBySystemProtection(t *testing.T) {
	c, _ := load(t, `{"namespace":"sys-pressure","system":[{"metric":"concurrency","threshold":6}],
		"pressure_test":{"system_ratio":0.5}}`)
	var open []*filter
	defer func() {
		for _, f := range open {
			f.OnDestroy()
		}
	}()
	hold := func(ctx *fakeCtx) *reply {
		f := &filter{rt: c.rt}
		if f.OnReceive(ctx, ctx.Req, nil, nil) == api.Stop {
			return ctx.Replied
		}
		open = append(open, f)
		return nil
	}
	for i := 0; i < 3; i++ {
		if r := hold(newCtx("r")); r != nil {
			t.Fatalf("normal request %d blocked: %+v", i, r)
		}
	}
	// 3 in flight = 0.5 x 6: pressure traffic is shed, normal traffic is not.
	r := hold(newCtx("r", "x-pressure-test", "true"))
	if r == nil {
		t.Fatal("pressure request admitted at 50% of the system threshold")
	}
	if v, _ := r.Headers.Get("x-moe-sentinel-blocked"); v != "system" || r.Code != 429 {
		t.Errorf("reply %d %q", r.Code, v)
	}
	for i := 0; i < 3; i++ {
		if r := hold(newCtx("r")); r != nil {
			t.Fatalf("normal request blocked below the system threshold: %+v", r)
		}
	}
	if r := hold(newCtx("r")); r == nil {
		t.Fatal("normal request admitted at the system threshold")
	}
}

func TestThrottlingQueuesInsteadOfRejecting(t *testing.T) {
	c, _ := load(t, `{"namespace":"throttle","flow":[{"threshold":10,"behavior":"throttling","max_queueing_time":"250ms"}]}`)
	if c.Needs().MayBlock&api.BlockReceive == 0 {
		t.Fatal("throttling must declare MayBlock for receive")
	}
	// 10 qps = one request per 100 ms. Six requests at once: the first passes,
	// the next ones are queued for 100 and 200 ms; waits beyond 250 ms are
	// refused.
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var admitted []time.Duration
	blocked := 0
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := request(c, newCtx("r"), 200, 0)
			mu.Lock()
			defer mu.Unlock()
			if r == nil {
				admitted = append(admitted, time.Since(start))
			} else {
				blocked++
			}
		}()
	}
	wg.Wait()
	if len(admitted) < 3 || len(admitted) > 4 || blocked < 2 {
		t.Fatalf("admitted at %v, %d blocked; want 3 (or 4) queued and the rest refused", admitted, blocked)
	}
	last := time.Duration(0)
	for _, d := range admitted {
		if d > last {
			last = d
		}
	}
	if last < 150*time.Millisecond || last > 600*time.Millisecond {
		t.Errorf("last admitted after %v, want about 200 ms (queued, bounded by max_queueing_time)", last)
	}
}

func TestWarmUpStartsBelowThreshold(t *testing.T) {
	c, _ := load(t, `{"namespace":"warm","flow":[{"threshold":100,"behavior":"warm_up","warm_up_period":"10s","warm_up_cold_factor":4}]}`)
	got := count(c, 200, func() *fakeCtx { return newCtx("r") })
	// Cold start admits about threshold/cold_factor.
	if got >= 100 || got < 10 {
		t.Errorf("cold start admitted %d of 200, want about 25", got)
	}
}

func TestLongKeysAreCut(t *testing.T) {
	c, m := load(t, `{"namespace":"long","resource":"$header_x-user","hotspot":[{"key":"$header_x-user","threshold":1}]}`)
	long := strings.Repeat("a", 5000)
	if r := request(c, newCtx("r", "x-user", long), 200, 0); r != nil {
		t.Fatalf("blocked: %+v", r)
	}
	if r := request(c, newCtx("r", "x-user", long+"b"), 200, 0); r == nil {
		t.Fatal("keys equal in their first 256 bytes must share the hot-spot budget")
	}
	for k := range *c.rt.space.resources.Load() {
		if len(k) > maxKeyLen {
			t.Errorf("resource key of %d bytes", len(k))
		}
	}
	if m.Value("res_"+strings.Repeat("a", 64)+"_passed") != 1 {
		t.Errorf("metric name not cut to 64 bytes: %v", m.Values())
	}
}
