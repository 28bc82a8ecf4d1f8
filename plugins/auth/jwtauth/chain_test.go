package jwtauth

import (
	"testing"

	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Through the real framework (registry, strict decode, Init, chain, ownership
// shim) over the fake Envoy.
func chainJSON() string {
	return `{"plugins":[{"name":"jwt-auth","config":{"keys":[{"secret":"` + string(hmacKey) + `"}],
		"hide_credentials":true,"consumer_claim":"sub"}}]}`
}

func TestThroughFramework(t *testing.T) {
	testKeys(t)
	cfg := fakeenvoy.MustParseChain(t, chainJSON())
	tok := sign(t, map[string]any{"alg": "HS256"}, map[string]any{"sub": "alice"}, hmacKey)
	res := fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{Headers: [][2]string{{"authorization", "Bearer " + tok}}})
	if res.Status != 200 || res.Upstream == nil || len(res.Violations) > 0 {
		t.Fatalf("status %d violations %v", res.Status, res.Violations)
	}
	if got := res.Upstream.Headers["x-consumer-name"]; len(got) != 1 || got[0] != "alice" {
		t.Fatalf("upstream consumer header %v", got)
	}
	if _, ok := res.Upstream.Headers["authorization"]; ok {
		t.Fatal("token reached the upstream")
	}
	res = fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{})
	if res.Status != 401 || res.Upstream != nil || res.Body != "missing token\n" {
		t.Fatalf("no token: %d %q", res.Status, res.Body)
	}
	if v := res.Headers["www-authenticate"]; len(v) != 1 || v[0] != `Bearer realm="moe"` {
		t.Fatalf("challenge %v", v)
	}
	if _, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"plugins":[{"name":"jwt-auth","config":{"keys":[{"secret":"short"}]}}]}`); err == nil {
		t.Fatal("bad config accepted")
	}
}

// BenchmarkChain is the whole per-request cost through the framework over
// fakeenvoy.Bench, with a bare pass-through Envoy filter as the baseline.
func BenchmarkChain(b *testing.B) {
	testKeys(b)
	b.Run("baseline-passthrough", fakeenvoy.BenchPassThrough)
	cfg := fakeenvoy.MustParseChain(b, chainJSON())
	tok := sign(b, map[string]any{"alg": "HS256"}, map[string]any{"sub": "alice", "iss": "https://idp.example"}, hmacKey)
	b.Run("jwt-auth-HS256", func(b *testing.B) { fakeenvoy.BenchChain(b, cfg, [2]string{"authorization", "Bearer " + tok}) })
}
