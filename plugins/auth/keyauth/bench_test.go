package keyauth

import (
	"testing"

	"github.com/moeproxy/moe/plugins/auth/internal/authn/authntest"
	"github.com/moeproxy/moe/shared/api"
)

type passThrough struct{}

func (passThrough) OnReceive(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	return api.Continue
}

func bench(b *testing.B, f api.ReceiverFilter, req *authntest.Headers, want api.Status) {
	ctx := authntest.NewContext("key-auth", req)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx.Reset()
		if st := f.OnReceive(ctx, req, nil, nil); st != want {
			b.Fatalf("status %v", st)
		}
	}
}

// BenchmarkBaseline is a pass-through filter on the same fake request: the
// harness cost to subtract from the others.
func BenchmarkBaseline(b *testing.B) {
	bench(b, passThrough{}, authntest.NewRequest("GET", "/", "x-api-key", aliceKey), api.Continue)
}

func BenchmarkKeyAuthHeaderHit(b *testing.B) {
	c, _ := mustParse(b, baseConfig(map[string]any{"consumer_header": ""}))
	bench(b, (*filter)(c), authntest.NewRequest("GET", "/", "x-api-key", aliceKey), api.Continue)
}

func BenchmarkKeyAuthHeaderHitForwardConsumer(b *testing.B) {
	c, _ := mustParse(b, baseConfig(nil))
	bench(b, (*filter)(c), authntest.NewRequest("GET", "/", "x-api-key", aliceKey), api.Continue)
}

func BenchmarkKeyAuthQueryHit(b *testing.B) {
	c, _ := mustParse(b, baseConfig(map[string]any{"consumer_header": ""}))
	bench(b, (*filter)(c), authntest.NewRequest("GET", "/p?x=1&api_key="+bobKey), api.Continue)
}

func BenchmarkKeyAuthWrongKey(b *testing.B) {
	c, _ := mustParse(b, baseConfig(nil))
	bench(b, (*filter)(c), authntest.NewRequest("GET", "/", "x-api-key", "wrong-wrong-wrong"), api.Stop)
}
