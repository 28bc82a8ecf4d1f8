package fault_test

import (
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Through the real framework over a fake Envoy: a delay runs the phase off
// the worker thread (one async Continue), an abort-only config inline.
func TestChain(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("fault", `{"match": {"headers": [{"name": "x-chaos", "exact": "on"}]},
		"delay": {"duration": "30ms"}, "abort": {"status": 503, "body": "fault injected\n", "headers": {"x-fault": "abort"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := r.Do(fakeenvoy.Request{Headers: [][2]string{{"x-chaos", "on"}}})
	if el := time.Since(start); res.Status != 503 || res.Body != "fault injected\n" || res.Headers["x-fault"][0] != "abort" || res.Upstream != nil || el < 30*time.Millisecond {
		t.Fatalf("status %d body %q headers %v upstream %v after %v", res.Status, res.Body, res.Headers, res.Upstream, el)
	}
	if len(res.Violations) > 0 || res.FilterState["moe.state.fault"] != "delay,abort" {
		t.Fatalf("violations %v filter state %v", res.Violations, res.FilterState)
	}
	res = r.Do(fakeenvoy.Request{})
	if res.Status != 200 || res.Upstream == nil || len(res.Violations) > 0 || res.Continues != 1 {
		t.Fatalf("not matching: status %d continues %d violations %v", res.Status, res.Continues, res.Violations)
	}

	abortOnly, err := fakeenvoy.NewPlugin("fault", `{"abort": {"status": 500}}`)
	if err != nil {
		t.Fatal(err)
	}
	res = abortOnly.Do(fakeenvoy.Request{})
	if res.Status != 500 || res.Continues != 0 || len(res.Violations) > 0 {
		t.Fatalf("abort only: status %d continues %d violations %v", res.Status, res.Continues, res.Violations)
	}
}

// A route's config replaces the filter's: faults on one route only.
func TestChainPerRoute(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("fault", `{"abort": {"status": 503, "percentage": 0}}`)
	if err != nil {
		t.Fatal(err)
	}
	flaky, err := r.WithRoute(`{"plugins":[{"name":"fault","config":{"abort":{"status":500}}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if res := r.Do(fakeenvoy.Request{}); res.Status != 200 {
		t.Fatalf("filter level: %d", res.Status)
	}
	if res := flaky.Do(fakeenvoy.Request{}); res.Status != 500 {
		t.Fatalf("route: %d", res.Status)
	}
}

// BenchmarkChain: requests that get no fault, through the moe filter manager
// on the fake Envoy, against the empty chain measured in the same run.
func BenchmarkChain(b *testing.B) {
	chaos := [2]string{"x-chaos", "off"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), chaos)
	})
	// Abort only: inline on the worker thread; a draw, then (for half the
	// requests) the header match, which fails.
	b.Run("abort-50pct-header-mismatch", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"fault","config":{"match":{"headers":[{"name":"x-chaos","exact":"on"}]},"abort":{"status":503,"percentage":50}}}]}`), chaos)
	})
	b.Run("abort-header-mismatch", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"fault","config":{"match":{"headers":[{"name":"x-chaos","exact":"on"}]},"abort":{"status":503}}}]}`), chaos)
	})
	// A delay configured: the request phase runs in a goroutine for every
	// request (MayBlock is per phase), even when no delay is drawn.
	b.Run("delay-configured-not-drawn", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"fault","config":{"delay":{"duration":"1s","percentage":0.0001}}}]}`), chaos)
	})
}
