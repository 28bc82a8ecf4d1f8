package hmacauth

import (
	"fmt"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func BenchmarkBaseline(b *testing.B) {
	req := fakeframework.NewRequest("GET", "/orders?id=42", "date", exampleDate, "x-nonce", exampleNonce, "authorization", exampleAuth)
	ctx := fakeframework.NewContext("hmac-auth", req)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ctx.Reset()
		api.PassThroughFilter{}.OnReceive(ctx, req, nil, nil)
	}
}

func benchHMAC(b *testing.B, alg string, replay bool) {
	extra := map[string]any{"consumer_header": ""}
	if !replay {
		extra["nonce_header"] = ""
	}
	c, _ := newTestConfig(b, extra)
	c.compiled.now = func() time.Time { return now }
	if replay {
		c.compiled.replay = newNonceStore(50_000_000)
	}
	secret := aliceSecret
	key := "alice-1"
	// Pre-sign b.N requests (distinct nonces) outside the timer.
	reqs := make([]*fakeframework.Request, b.N)
	for i := range reqs {
		reqs[i] = signed(key, secret, alg, "GET", "/orders?id=42", stdList, "date", httpDate, "x-nonce", fmt.Sprint("bench-", i))
	}
	ctx := fakeframework.NewContext("hmac-auth", nil)
	f := (*filter)(c)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx.Reset()
		ctx.Req = reqs[i]
		if st := f.OnReceive(ctx, reqs[i], nil, nil); st != api.Continue {
			b.Fatalf("refused: %+v", ctx.Replied)
		}
	}
}

func BenchmarkHMACAuthSHA256(b *testing.B)         { benchHMAC(b, "hmac-sha256", true) }
func BenchmarkHMACAuthSHA512(b *testing.B)         { benchHMAC(b, "hmac-sha512", true) }
func BenchmarkHMACAuthSHA256NoReplay(b *testing.B) { benchHMAC(b, "hmac-sha256", false) }

func BenchmarkHMACAuthBadSignature(b *testing.B) {
	c, _ := newTestConfig(b, nil)
	req := signed("alice-1", "wrong-secret-0123456789abcdef", "hmac-sha256", "GET", "/", stdList, std()...)
	ctx := fakeframework.NewContext("hmac-auth", req)
	f := (*filter)(c)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx.Reset()
		if st := f.OnReceive(ctx, req, nil, nil); st != api.Stop {
			b.Fatal("accepted")
		}
	}
}
