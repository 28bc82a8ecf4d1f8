package keyauth

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// BenchmarkBaseline is a pass-through filter on the same fake request: the
// harness cost to subtract from the others.
func BenchmarkBaseline(b *testing.B) {
	fakeframework.Bench(b, plugin, api.PassThroughFilter{}, fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey), api.Continue)
}

func BenchmarkKeyAuthHeaderHit(b *testing.B) {
	c, _ := mustParse(b, baseConfig(map[string]any{"consumer_header": ""}))
	fakeframework.Bench(b, plugin, (*filter)(c), fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey), api.Continue)
}

func BenchmarkKeyAuthHeaderHitForwardConsumer(b *testing.B) {
	c, _ := mustParse(b, baseConfig(nil))
	fakeframework.Bench(b, plugin, (*filter)(c), fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey), api.Continue)
}

func BenchmarkKeyAuthQueryHit(b *testing.B) {
	c, _ := mustParse(b, baseConfig(map[string]any{"consumer_header": ""}))
	fakeframework.Bench(b, plugin, (*filter)(c), fakeframework.NewRequest("GET", "/p?x=1&api_key="+bobKey), api.Continue)
}

func BenchmarkKeyAuthWrongKey(b *testing.B) {
	c, _ := mustParse(b, baseConfig(nil))
	fakeframework.Bench(b, plugin, (*filter)(c), fakeframework.NewRequest("GET", "/", "x-api-key", "wrong-wrong-wrong"), api.Stop)
}
