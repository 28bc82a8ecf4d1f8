package keyauth

import (
	"testing"

	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Through the real framework (registry, strict decode, chain, ownership shim)
// over the fake Envoy: what the unit tests check on the filter alone.
const chainJSON = `{"plugins":[{"name":"key-auth","config":{
	"sources":["header:x-api-key"],"hide_credentials":true,
	"consumers":[{"name":"alice","keys":["alice-key-0123456789"]}]}}]}`

func TestThroughFramework(t *testing.T) {
	cfg := fakeenvoy.MustParseChain(t, chainJSON)
	res := fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{Headers: [][2]string{{"x-api-key", "alice-key-0123456789"}}})
	if res.Status != 200 || res.Upstream == nil || len(res.Violations) > 0 {
		t.Fatalf("status %d violations %v", res.Status, res.Violations)
	}
	if got := res.Upstream.Headers["x-consumer-name"]; len(got) != 1 || got[0] != "alice" {
		t.Fatalf("upstream consumer header %v", got)
	}
	if _, ok := res.Upstream.Headers["x-api-key"]; ok {
		t.Fatal("key reached the upstream")
	}
	res = fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{})
	if res.Status != 401 || res.Upstream != nil || res.Body != "missing API key\n" {
		t.Fatalf("no key: %d %q", res.Status, res.Body)
	}
	if v := res.Headers["www-authenticate"]; len(v) != 1 || v[0] != `Key realm="moe"` {
		t.Fatalf("challenge %v", v)
	}
	if _, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"plugins":[{"name":"key-auth","config":{"consumers":[{"name":"a","keys":["k"]}]}}]}`); err == nil {
		t.Fatal("bad config accepted")
	}
}

// BenchmarkChain is the whole per-request cost through the framework over
// fakeenvoy.Bench; the baseline is a bare pass-through Envoy filter on the same
// fake, measured in the same run.
func BenchmarkChain(b *testing.B) {
	b.Run("baseline-passthrough", fakeenvoy.BenchPassThrough)
	cfg := fakeenvoy.MustParseChain(b, chainJSON)
	b.Run("key-auth", func(b *testing.B) {
		fakeenvoy.BenchChain(b, cfg, [2]string{"x-api-key", "alice-key-0123456789"})
	})
}
