package jwtauth

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// passThrough is the baseline: a filter that reads one header and continues,
// run through the same fake request objects.
type passThrough struct{}

func (passThrough) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if _, ok := h.Get("authorization"); !ok {
		return api.Stop
	}
	return api.Continue
}

func benchFilter(b *testing.B, f api.ReceiverFilter, tok string) {
	req := bearer(tok)
	ctx := fakeframework.NewContext("jwt-auth", req)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if f.OnReceive(ctx, req, nil, nil) != api.Continue {
			b.Fatal("denied")
		}
	}
}

func BenchmarkBaselinePassThrough(b *testing.B) {
	benchFilter(b, passThrough{}, "x")
}

func BenchmarkVerifyHS256(b *testing.B) {
	testKeys(b)
	cfg, _ := newRT(b, withHS(nil))
	benchFilter(b, &filter{rt: cfg.rt}, sign(b, map[string]any{"alg": "HS256", "typ": "JWT"}, claimsValid(), hmacKey))
}

func BenchmarkVerifyRS256(b *testing.B) {
	testKeys(b)
	cfg, _ := newRT(b, string(mustJSON(map[string]any{"keys": []any{map[string]any{"kid": "k1", "pem": pubPEM(b, &rsaKey.PublicKey)}}})))
	benchFilter(b, &filter{rt: cfg.rt}, sign(b, map[string]any{"alg": "RS256", "kid": "k1"}, claimsValid(), rsaKey))
}

func BenchmarkVerifyES256(b *testing.B) {
	testKeys(b)
	cfg, _ := newRT(b, string(mustJSON(map[string]any{"keys": []any{map[string]any{"pem": pubPEM(b, &ecKeys["ES256"].PublicKey)}}})))
	benchFilter(b, &filter{rt: cfg.rt}, sign(b, map[string]any{"alg": "ES256"}, claimsValid(), ecKeys["ES256"]))
}

// HS256 with a consumer claim and two forwarded claims: the full feature path.
func BenchmarkVerifyHS256ClaimsAndConsumer(b *testing.B) {
	testKeys(b)
	cfg, _ := newRT(b, withHS(map[string]any{
		"consumer_claim": "sub",
		"consumers":      []any{map[string]any{"name": "alice"}},
		"forward_claims": []any{map[string]any{"claim": "sub", "header": "x-sub"}, map[string]any{"claim": "iss", "header": "x-iss"}},
	}))
	benchFilter(b, &filter{rt: cfg.rt}, sign(b, map[string]any{"alg": "HS256"}, claimsValid(), hmacKey))
}
