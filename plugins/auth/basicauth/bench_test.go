package basicauth

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
	ctx := authntest.NewContext("basic-auth", req)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx.Reset()
		if st := f.OnReceive(ctx, req, nil, nil); st != want {
			b.Fatalf("status %v %+v", st, ctx.Replied)
		}
	}
}

func BenchmarkBaseline(b *testing.B) {
	bench(b, passThrough{}, authntest.NewRequest("GET", "/", "authorization", basic("alice:alice-pw")), api.Continue)
}

func BenchmarkBasicAuthPlain(b *testing.B) {
	c, _ := mustParse(b, testConfig(b, map[string]any{"consumer_header": ""}))
	bench(b, (*filter)(c), authntest.NewRequest("GET", "/", "authorization", basic("alice:alice-pw")), api.Continue)
}

// BenchmarkBasicAuthBcryptCached is a hot bcrypt credential: served from the
// verified cache after the first request.
func BenchmarkBasicAuthBcryptCached(b *testing.B) {
	c, _ := mustParse(b, testConfig(b, map[string]any{"consumer_header": ""}))
	bench(b, (*filter)(c), authntest.NewRequest("GET", "/", "authorization", basic("bob@example.com:bob-pw")), api.Continue)
}

// BenchmarkBasicAuthBcryptMiss is the uncached cost (bcrypt cost 4 here;
// production hashes use 10-12, i.e. ~64-256x more).
func BenchmarkBasicAuthBcryptMiss(b *testing.B) {
	c, _ := mustParse(b, testConfig(b, map[string]any{"consumer_header": "", "cache_size": 0}))
	bench(b, (*filter)(c), authntest.NewRequest("GET", "/", "authorization", basic("bob@example.com:bob-pw")), api.Continue)
}

func BenchmarkBasicAuthWrongPassword(b *testing.B) {
	c, _ := mustParse(b, testConfig(b, nil))
	bench(b, (*filter)(c), authntest.NewRequest("GET", "/", "authorization", basic("alice:wrong")), api.Stop)
}
