package hmacauth

import (
	"fmt"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/redistest"
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

// BenchmarkHMACAuthSHA256RedisNonce is benchHMAC with the nonces in a local
// redis-server: the Go side plus one SET NX PX round trip on loopback,
// called directly (no goroutine hop; through moe the phase runs off the
// worker thread).
func BenchmarkHMACAuthSHA256RedisNonce(b *testing.B) {
	r := redistest.Start(b)
	c, _ := mustParse(b, testConfig(map[string]any{"consumer_header": "", "nonce_store": map[string]any{
		"type": "redis", "redis": map[string]any{"addrs": []string{r.Addr()}, "timeout": "1s"}}}))
	b.Cleanup(c.Destroy)
	c.compiled.now = func() time.Time { return now }
	prefix := fmt.Sprint("bench-redis-", time.Now().UnixNano(), "-")
	reqs := make([]*fakeframework.Request, b.N)
	for i := range reqs {
		reqs[i] = signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/orders?id=42", stdList, "date", httpDate, "x-nonce", prefix+fmt.Sprint(i))
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
