package basicauth

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func BenchmarkBaseline(b *testing.B) {
	fakeframework.Bench(b, plugin, api.PassThroughFilter{}, fakeframework.NewRequest("GET", "/", "authorization", basic("alice:alice-pw")), api.Continue)
}

func BenchmarkBasicAuthPlain(b *testing.B) {
	c, _ := mustParse(b, testConfig(b, map[string]any{"consumer_header": ""}))
	fakeframework.Bench(b, plugin, (*filter)(c), fakeframework.NewRequest("GET", "/", "authorization", basic("alice:alice-pw")), api.Continue)
}

// BenchmarkBasicAuthBcryptCached is a hot bcrypt credential: served from the
// verified cache after the first request.
func BenchmarkBasicAuthBcryptCached(b *testing.B) {
	c, _ := mustParse(b, testConfig(b, map[string]any{"consumer_header": ""}))
	fakeframework.Bench(b, plugin, (*filter)(c), fakeframework.NewRequest("GET", "/", "authorization", basic("bob@example.com:bob-pw")), api.Continue)
}

// BenchmarkBasicAuthBcryptMiss is the uncached cost (bcrypt cost 4 here;
// production hashes use 10-12, i.e. ~64-256x more).
func BenchmarkBasicAuthBcryptMiss(b *testing.B) {
	c, _ := mustParse(b, testConfig(b, map[string]any{"consumer_header": "", "cache_size": 0}))
	fakeframework.Bench(b, plugin, (*filter)(c), fakeframework.NewRequest("GET", "/", "authorization", basic("bob@example.com:bob-pw")), api.Continue)
}

func BenchmarkBasicAuthWrongPassword(b *testing.B) {
	c, _ := mustParse(b, testConfig(b, nil))
	fakeframework.Bench(b, plugin, (*filter)(c), fakeframework.NewRequest("GET", "/", "authorization", basic("alice:wrong")), api.Stop)
}
