package iprestriction

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// TestThroughFramework runs the plugin inside the real moe filter manager
// over the fake Envoy (shared/testing/fakeenvoy), with a per-route override.
func TestThroughFramework(t *testing.T) {
	r, err := fakeenvoy.NewPlugin(Name, `{"allow":["10.0.0.0/8"],"deny":["10.9.0.0/16"],"message":"no"}`)
	if err != nil {
		t.Fatal(err)
	}
	route, err := r.WithRoute(`{"plugins":[{"name":"ip-restriction","config":{"allow":["192.0.2.1"],"xff_num_trusted_hops":1}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		r      *fakeenvoy.Runner
		remote string
		xff    string
		want   int
	}{
		{"allowed", r, "10.1.1.1:1", "", 200},
		{"deny wins", r, "10.9.1.1:1", "", 403},
		{"not allowed", r, "192.0.2.1:1", "", 403},
		{"route: XFF hop allowed", route, "10.9.1.1:1", "192.0.2.1", 200},
		{"route: missing XFF", route, "192.0.2.1:1", "", 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := fakeenvoy.Request{RemoteAddr: tc.remote}
			if tc.xff != "" {
				req.Headers = [][2]string{{"x-forwarded-for", tc.xff}}
			}
			res := tc.r.Do(req)
			if res.Status != tc.want || len(res.Violations) > 0 {
				t.Fatalf("status %d (want %d) body %q violations %v", res.Status, tc.want, res.Body, res.Violations)
			}
			if tc.want == 403 && (res.Upstream != nil || res.Body != "no" && tc.r == r) {
				t.Fatalf("denied request: upstream %v body %q", res.Upstream, res.Body)
			}
		})
	}
}

// BenchmarkChain: one whole request through the moe filter manager and the
// fake Envoy, against an Envoy pass-through filter and an empty moe chain.
func BenchmarkChain(b *testing.B) {
	b.Run("baseline-envoy-passthrough", fakeenvoy.BenchPassThrough)
	b.Run("baseline-empty-moe-chain", func(b *testing.B) { fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`)) })
	// fakeenvoy.Bench has no StreamInfo (no downstream address), so this measures
	// the X-Forwarded-For path; the downstream path is in BenchmarkOnReceive.
	b.Run("ip-restriction-xff", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"ip-restriction","config":{"allow":["192.0.2.0/24"],"xff_num_trusted_hops":1}}]}`),
			[2]string{"x-forwarded-for", "6.6.6.6, 192.0.2.1"})
	})
}
