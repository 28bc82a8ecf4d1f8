package sentinel

import (
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// These tests run the plugin inside the real moe filter manager, driven by the
// framework's fake Envoy.

func mustRunner(t *testing.T, cfg string) *fakeenvoy.Runner {
	t.Helper()
	r, err := fakeenvoy.NewPlugin("sentinel", cfg)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if d, ok := r.Config().(interface{ Destroy() }); ok {
		t.Cleanup(d.Destroy)
	}
	return r
}

func noViolations(t *testing.T, res *fakeenvoy.Result) {
	t.Helper()
	if len(res.Violations) > 0 {
		t.Fatalf("SDK violations: %v", res.Violations)
	}
}

func TestFakehostBlockedRequestGetsReplyAndHeader(t *testing.T) {
	r := mustRunner(t, `{"namespace":"fh-flow","flow":[{"threshold":1}]}`)
	req := fakeenvoy.Request{RouteName: "default"}
	if res := r.Do(req); res.Status != 200 {
		t.Fatalf("first request: %d", res.Status)
	}
	res := r.Do(req)
	noViolations(t, res)
	if res.Status != 429 || res.LocalReply == nil {
		t.Fatalf("second request: status %d reply %+v", res.Status, res.LocalReply)
	}
	if got := res.Headers["x-moe-sentinel-blocked"]; len(got) != 1 || got[0] != "flow" {
		t.Errorf("blocked header = %v", got)
	}
	if res.Body != "blocked by sentinel: flow\n" {
		t.Errorf("body = %q", res.Body)
	}
	if res.Upstream != nil {
		t.Error("a blocked request reached the upstream")
	}
}

func TestFakehostAbortedRequestsExitTheirEntryOnce(t *testing.T) {
	r := mustRunner(t, `{"namespace":"fh-abort","isolation":[{"max_concurrency":1}]}`)
	before := fakeenvoy.Stats.Gauge("moe_sentinel_inflight")
	for _, at := range []fakeenvoy.Phase{fakeenvoy.DecodeHeaders, fakeenvoy.EncodeHeaders} {
		res := r.Do(fakeenvoy.Request{RouteName: "default", AbortAt: at})
		noViolations(t, res)
		if !res.Aborted || !res.Destroyed {
			t.Fatalf("abort at %v: aborted %v destroyed %v", at, res.Aborted, res.Destroyed)
		}
		// With max_concurrency 1 the next request passes only if the aborted
		// one's entry was exited.
		if res := r.Do(fakeenvoy.Request{RouteName: "default"}); res.Status != 200 {
			t.Fatalf("after an abort at %v the next request got %d: entry not exited", at, res.Status)
		}
	}
	if got := fakeenvoy.Stats.Gauge("moe_sentinel_inflight"); got != before {
		t.Fatalf("inflight gauge %d, was %d: an entry was exited twice or never", got, before)
	}
}

func TestFakehostErrorsFromUpstreamOpenTheBreaker(t *testing.T) {
	r := mustRunner(t, `{"namespace":"fh-cb","circuit_breakers":[{"strategy":"error_count","threshold":2,"min_request_amount":1,"retry_timeout":"10s"}]}`)
	fail := fakeenvoy.Request{RouteName: "default", Upstream: func(*fakeenvoy.Upstream) fakeenvoy.Response {
		return fakeenvoy.Response{Status: 503, Body: []string{"down"}}
	}}
	r.Do(fail)
	r.Do(fail)
	res := r.Do(fakeenvoy.Request{RouteName: "default"})
	noViolations(t, res)
	if res.Status != 503 || res.LocalReply == nil {
		t.Fatalf("after 2 upstream errors: status %d reply %+v", res.Status, res.LocalReply)
	}
	if got := res.Headers["x-moe-sentinel-blocked"]; len(got) != 1 || got[0] != "circuit-breaker" {
		t.Errorf("blocked header = %v", got)
	}
}

func TestFakehostThrottlingRunsOffTheWorkerThread(t *testing.T) {
	r := mustRunner(t, `{"namespace":"fh-throttle","flow":[{"threshold":20,"behavior":"throttling","max_queueing_time":"200ms"}]}`)
	for i := 0; i < 3; i++ {
		res := r.Do(fakeenvoy.Request{RouteName: "default"})
		noViolations(t, res)
		if res.Status != 200 {
			t.Fatalf("request %d: %d", i, res.Status)
		}
		if res.Continues == 0 {
			t.Fatalf("request %d: OnReceive ran synchronously; a throttling rule must run it off Envoy's worker thread", i)
		}
	}
}

func TestFakehostRouteConfigHasItsOwnRules(t *testing.T) {
	r := mustRunner(t, `{"namespace":"fh-parent","flow":[{"threshold":3}]}`)
	special, err := r.WithRoute(`{"plugins":[{"name":"sentinel","config":{"namespace":"fh-route","flow":[{"threshold":1}]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	admitted := func(run *fakeenvoy.Runner, route string, n int) int {
		ok := 0
		for i := 0; i < n; i++ {
			if run.Do(fakeenvoy.Request{RouteName: route}).Status == 200 {
				ok++
			}
		}
		return ok
	}
	if got := admitted(special, "special", 5); got != 1 {
		t.Errorf("special route admitted %d, want 1", got)
	}
	if got := admitted(r, "default", 5); got != 3 {
		t.Errorf("default route admitted %d, want 3", got)
	}
}

func TestFakehostRequestDestroyedWhileQueuedIsExited(t *testing.T) {
	// A literal resource: rendering it does not touch the stream, so OnReceive
	// reaches sentinel even when the stream is already gone.
	r := mustRunner(t, `{"namespace":"fh-queued","resource":"api","flow":[{"threshold":5,"behavior":"throttling","max_queueing_time":"1s"}]}`)
	inflight := func() uint64 { return fakeenvoy.Stats.Gauge("moe_sentinel_inflight") }
	passed := func() uint64 { return fakeenvoy.Stats.Counter("moe_sentinel_res_api_passed") }
	before, passedBefore := inflight(), passed()
	r.Do(fakeenvoy.Request{RouteName: "default"}) // takes the current slot
	// The next request waits ~200ms in sentinel, in a goroutine; the client
	// goes away meanwhile. Sentinel admits it later: its entry must be exited
	// at once.
	res := r.Do(fakeenvoy.Request{RouteName: "default", AbortAt: fakeenvoy.DecodeHeaders})
	noViolations(t, res)
	if !res.Destroyed {
		t.Fatal("stream not destroyed")
	}
	if !tb.Poll(3*time.Second, func() bool { return passed() >= passedBefore+2 }) {
		t.Fatalf("the queued request was never admitted (passed %d -> %d)", passedBefore, passed())
	}
	time.Sleep(20 * time.Millisecond)
	if inflight() != before {
		t.Fatalf("inflight gauge %d, was %d: the late entry was not exited", inflight(), before)
	}
}
