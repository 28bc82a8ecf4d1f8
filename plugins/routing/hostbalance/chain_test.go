package hostbalance

import (
	"fmt"
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// Through the real framework over a fake Envoy: the pin reaches Envoy, in
// turn, and nothing misuses the SDK.
func TestChainPinsTheUpstreamHost(t *testing.T) {
	r, err := fakeenvoy.NewPlugin(Name, `{`+threeHosts+`}`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := 0; i < 9; i++ {
		res := r.Do(fakeenvoy.Request{Cluster: "backends"})
		if res.Status != 200 || res.Upstream == nil || len(res.Violations) > 0 {
			t.Fatalf("status %d violations %v", res.Status, res.Violations)
		}
		seen[res.Upstream.OverrideHost]++
	}
	for _, a := range []string{"127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"} {
		if seen[a] != 3 {
			t.Fatalf("pins %v", seen)
		}
	}
}

var benchHosts = func() string {
	s := `"hosts": [`
	for i := 0; i < 10; i++ {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(`{"address": "10.0.0.%d:8080"}`, i+1)
	}
	return s + "]"
}()

// BenchmarkChain: a whole request through the moe filter manager on the fake
// Envoy (pick, SetUpstreamOverrideHost, response, log), against the empty
// chain in the same run. The fake reports no upstream host, so the response
// is not fed back here; BenchmarkBalancer measures that part.
func BenchmarkChain(b *testing.B) {
	user := [2]string{"x-user", "alice"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), user)
	})
	for _, s := range []struct{ name, cfg string }{
		{"round-robin", `"strategy": "round-robin"`},
		{"least-request", `"strategy": "least-request"`},
		{"peak-ewma", `"strategy": "peak-ewma"`},
		{"consistent-hash-maglev", `"strategy": "consistent-hash", "hash": {"key": "$header_x-user", "algorithm": "maglev"}`},
		{"consistent-hash-ring", `"strategy": "consistent-hash", "hash": {"key": "$header_x-user"}`},
	} {
		b.Run("host-balance-"+s.name, func(b *testing.B) {
			cfg := fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"host-balance","config":{`+benchHosts+`, `+s.cfg+`}}]}`)
			fakeenvoy.BenchChain(b, cfg, user)
		})
	}
}

// BenchmarkBalancer: pick, feedback and release of one request on 10 hosts
// with samples, per strategy (the balancer's whole per-request work).
func BenchmarkBalancer(b *testing.B) {
	for _, s := range strategies {
		b.Run(s, func(b *testing.B) {
			c, _ := fakeframework.MustParse[*Config](b, Name, newConfig, `{`+benchHosts+`, "strategy": "`+s+`", "hash": {"key": "$header_x-user"}}`)
			bal := c.bal
			for _, h := range bal.set.Load().hosts {
				bal.feedback(h, monoNow(), 5e6, success)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now := monoNow()
				h, _ := bal.pick(now, uint64(i)*0x9e3779b97f4a7c15, true)
				bal.feedback(h, now, 5e6, success)
				bal.release(h)
			}
		})
	}
}
