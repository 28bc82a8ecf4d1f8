package extauth

import (
	"encoding/json"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Through the real framework over the fake Envoy: the MayBlock phase runs in a
// goroutine and resumes the stream.
func TestThroughFramework(t *testing.T) {
	svc := newAuthService(t)
	cfg := fakeenvoy.MustParseChain(t, `{"plugins":[{"name":"ext-auth","config":{"url":"`+svc.URL+`","allowed_upstream_headers":["x-user"],"consumer_from_header":"x-user"}}]}`)
	res := fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{Headers: [][2]string{{"authorization", "Bearer good"}, {"x-consumer-name", "spoofed"}}})
	if res.Status != 200 || res.Upstream == nil || len(res.Violations) > 0 {
		t.Fatalf("status %d violations %v", res.Status, res.Violations)
	}
	if got := res.Upstream.Headers["x-user"]; len(got) != 1 || got[0] != "alice" {
		t.Fatalf("upstream x-user %v", got)
	}
	if got := res.Upstream.Headers["x-consumer-name"]; len(got) != 1 || got[0] != "alice" {
		t.Fatalf("upstream x-consumer-name %v", got)
	}
	// The consumer the service named is what later golang filters see.
	var c api.Consumer
	if err := json.Unmarshal([]byte(res.FilterState["moe.consumer"]), &c); err != nil || c.Name != "alice" {
		t.Fatalf("filter state %v (%v)", res.FilterState, err)
	}
	res = fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{Headers: [][2]string{{"authorization", "Bearer bad"}}})
	if res.Status != 401 || res.Body != "denied by service" || len(res.Violations) > 0 {
		t.Fatalf("deny: %d %q %v", res.Status, res.Body, res.Violations)
	}
}

// BenchmarkChain: whole per-request cost through the framework (including the
// goroutine hop of a MayBlock phase), pass-through baseline in the same run.
func BenchmarkChain(b *testing.B) {
	svc := newAuthService(b)
	b.Run("baseline-passthrough", fakeenvoy.BenchPassThrough)
	for name, extra := range map[string]string{"ext-auth-cached": `,"cache":{"ttl":"1h"}`, "ext-auth-uncached": ``} {
		cfg := fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"ext-auth","config":{"url":"`+svc.URL+`","timeout":"2s"`+extra+`}}]}`)
		b.Run(name, func(b *testing.B) { fakeenvoy.BenchChain(b, cfg, [2]string{"authorization", "Bearer good"}) })
	}
}
