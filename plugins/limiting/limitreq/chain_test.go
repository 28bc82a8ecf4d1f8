package limitreq

import (
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// TestThroughFramework runs the plugin inside the real moe filter manager
// over the fake Envoy: inline without max_delay, in a goroutine (Running,
// then Continue) with it.
func TestThroughFramework(t *testing.T) {
	t.Run("inline reject with Retry-After", func(t *testing.T) {
		r, err := fakeenvoy.NewPlugin(Name, `{"rate":0.5,"burst":1}`)
		if err != nil {
			t.Fatal(err)
		}
		if res := r.Do(fakeenvoy.Request{RemoteAddr: "192.0.2.1:1000"}); res.Status != 200 || res.Continues != 0 || len(res.Violations) > 0 {
			t.Fatalf("first: %d continues=%d %v", res.Status, res.Continues, res.Violations)
		}
		res := r.Do(fakeenvoy.Request{RemoteAddr: "192.0.2.1:2000"}) // same IP, other port
		if res.Status != 429 || res.Upstream != nil || len(res.Violations) > 0 {
			t.Fatalf("second: %d %v", res.Status, res.Violations)
		}
		if ra := res.Headers["retry-after"]; len(ra) != 1 || ra[0] != "2" {
			t.Fatalf("Retry-After %v, want 2", ra)
		}
		if res := r.Do(fakeenvoy.Request{RemoteAddr: "192.0.2.2:1000"}); res.Status != 200 {
			t.Fatalf("other IP: %d", res.Status)
		}
	})
	t.Run("delay runs async", func(t *testing.T) {
		r, err := fakeenvoy.NewPlugin(Name, `{"rate":20,"burst":1,"key":"$header_x-user","max_delay":"1s"}`)
		if err != nil {
			t.Fatal(err)
		}
		req := fakeenvoy.Request{Headers: [][2]string{{"x-user", "a"}}}
		start := time.Now()
		for i := 0; i < 3; i++ {
			res := r.Do(req)
			if res.Status != 200 || len(res.Violations) > 0 {
				t.Fatalf("request %d: %d %v", i, res.Status, res.Violations)
			}
			if res.Continues == 0 {
				t.Fatalf("request %d: with max_delay the phase must run in a goroutine (Running + Continue)", i)
			}
		}
		if el := time.Since(start); el < 90*time.Millisecond {
			t.Fatalf("3 requests at 20 rps took %v, want >= 100ms", el)
		}
	})
	t.Run("client abort while delayed", func(t *testing.T) {
		r, err := fakeenvoy.NewPlugin(Name, `{"rate":1,"burst":1,"key":"$header_x-user","max_delay":"5s"}`)
		if err != nil {
			t.Fatal(err)
		}
		req := fakeenvoy.Request{Headers: [][2]string{{"x-user", "a"}}}
		if res := r.Do(req); res.Status != 200 {
			t.Fatal(res.Status)
		}
		req.AbortAt = fakeenvoy.DecodeHeaders
		start := time.Now()
		res := r.Do(req)
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("aborted request held for %v", el)
		}
		time.Sleep(50 * time.Millisecond) // let the goroutine see the end of the request
		if v, _ := res.Late(); len(v) > 0 {
			t.Fatalf("violations after abort: %v", v)
		}
	})
}

// BenchmarkChain: whole requests through the fake Envoy and the moe filter
// manager against an Envoy pass-through filter and an empty moe chain.
// (fakeenvoy.Bench has no StreamInfo, so the key is a header here.)
func BenchmarkChain(b *testing.B) {
	user := [2]string{"x-user", "alice"}
	b.Run("baseline-envoy-passthrough", fakeenvoy.BenchPassThrough)
	b.Run("baseline-empty-moe-chain", func(b *testing.B) { fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), user) })
	b.Run("limit-req-passed", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"limit-req","config":{"rate":1e9,"burst":1000000,"key":"$header_x-user"}}]}`), user)
	})
	// max_delay set: every request runs the phase in a goroutine (the price of
	// being allowed to wait), even when it does not wait.
	b.Run("limit-req-passed-with-max_delay-async", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"limit-req","config":{"rate":1e9,"burst":1000000,"key":"$header_x-user","max_delay":"1s"}}]}`), user)
	})
}
