package jwtauth

import (
	"crypto/x509"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// allKeysConfig has one inline key per algorithm family, each in a different
// format (secret, PEM, JWK object, JWK string).
func allKeysConfig(t testing.TB, extra map[string]any) string {
	testKeys(t)
	edJWK, err := jwk.Import(edKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"keys": []any{
			map[string]any{"kid": "hs", "secret": string(hmacKey)},
			map[string]any{"kid": "rsa", "pem": pubPEM(t, &rsaKey.PublicKey)},
			map[string]any{"kid": "es256", "pem": pubPEM(t, &ecKeys["ES256"].PublicKey)},
			map[string]any{"kid": "es384", "jwk": json.RawMessage(mustJSONAny(t, ecKeys["ES384"].Public()))},
			map[string]any{"kid": "es512", "jwk": string(mustJSONAny(t, ecKeys["ES512"].Public()))},
			map[string]any{"kid": "ed", "jwk": json.RawMessage(mustJSON(edJWK))},
		},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return string(mustJSON(cfg))
}

func mustJSONAny(t testing.TB, raw any) []byte {
	k, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	return mustJSON(k)
}

var kidFor = map[string]string{
	"HS256": "hs", "HS384": "hs", "HS512": "hs",
	"RS256": "rsa", "RS384": "rsa", "RS512": "rsa", "PS256": "rsa", "PS384": "rsa", "PS512": "rsa",
	"ES256": "es256", "ES384": "es384", "ES512": "es512", "EdDSA": "ed",
}

func TestEveryAlgorithmVerifiesWithItsKey(t *testing.T) {
	cfg, m := newRT(t, allKeysConfig(t, nil))
	for _, a := range algNames {
		for _, withKid := range []bool{true, false} {
			hdr := map[string]any{"alg": a.name, "typ": "JWT"}
			if withKid {
				hdr["kid"] = kidFor[a.name]
			}
			tok := sign(t, hdr, claimsValid(), signKey(a.name))
			ctx, st := do(t, cfg, bearer(tok))
			if st != api.Continue {
				t.Fatalf("%s (kid %v): denied %+v", a.name, withKid, ctx.Replied)
			}
		}
	}
	if got := m.Count("allowed"); got != uint64(2*len(algNames)) {
		t.Fatalf("allowed = %d", got)
	}
}

func TestWrongSignatureIsRejected(t *testing.T) {
	cfg, m := newRT(t, allKeysConfig(t, nil))
	for _, alg := range []string{"HS256", "RS256", "PS256", "ES256", "EdDSA"} {
		tok := sign(t, map[string]any{"alg": alg}, claimsValid(), signKey(alg))
		// Flip one signature character.
		b := []byte(tok)
		i := len(b) - 5
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		ctx, _ := do(t, cfg, bearer(string(b)))
		wantDenied(t, ctx, "invalid signature")

		// Same token with a changed payload.
		parts := strings.Split(tok, ".")
		cl := claimsValid()
		cl["sub"] = "admin"
		ctx, _ = do(t, cfg, bearer(parts[0]+"."+b64(mustJSON(cl))+"."+parts[2]))
		wantDenied(t, ctx, "invalid signature")
	}
	// Signed by another RSA key.
	tok := sign(t, map[string]any{"alg": "RS256", "kid": "rsa"}, claimsValid(), rsaKey2)
	ctx, _ := do(t, cfg, bearer(tok))
	wantDenied(t, ctx, "invalid signature")
	if m.Count("denied_invalid_signature") != 11 {
		t.Fatalf("denied_invalid_signature = %d", m.Count("denied_invalid_signature"))
	}
}

func TestAlgNoneIsRejected(t *testing.T) {
	cfg, m := newRT(t, allKeysConfig(t, nil))
	unsigned := b64([]byte(`{"alg":"none"}`)) + "." + b64(mustJSON(claimsValid()))
	for name, tok := range map[string]string{
		// RFC 7519 6.1: an unsecured JWT is "header.payload." (empty signature).
		"empty signature": unsigned + ".",
		"dummy signature": unsigned + ".c2ln",
		"None":            b64([]byte(`{"alg":"None"}`)) + "." + b64(mustJSON(claimsValid())) + ".c2ln",
		"missing alg":     b64([]byte(`{"typ":"JWT"}`)) + "." + b64(mustJSON(claimsValid())) + ".c2ln",
	} {
		ctx, st := do(t, cfg, bearer(tok))
		if st != api.Stop || ctx.Replied == nil {
			t.Fatalf("%s: not rejected", name)
		}
		t.Run(name, func(t *testing.T) { wantDenied(t, ctx, "algorithm not allowed") })
	}
	if m.Count("denied_algorithm_not_allowed") != 4 || m.Count("denied_malformed_token") != 0 {
		t.Fatalf("metrics: alg %d malformed %d", m.Count("denied_algorithm_not_allowed"), m.Count("denied_malformed_token"))
	}
}

// An empty signature with a real algorithm is a bad signature, whatever the
// key type.
func TestEmptySignatureIsInvalid(t *testing.T) {
	cfg, m := newRT(t, allKeysConfig(t, nil))
	for _, alg := range []string{"HS256", "RS256", "PS256", "ES256", "EdDSA"} {
		tok := b64(mustJSON(map[string]any{"alg": alg})) + "." + b64(mustJSON(claimsValid())) + "."
		ctx, _ := do(t, cfg, bearer(tok))
		t.Run(alg, func(t *testing.T) { wantDenied(t, ctx, "invalid signature") })
	}
	if m.Count("denied_invalid_signature") != 5 {
		t.Fatalf("denied_invalid_signature = %d", m.Count("denied_invalid_signature"))
	}
}

// The classic confusion attack: the attacker knows the RSA public key and
// uses it as an HMAC secret. The RSA key only allows RS*/PS*, so HS256 never
// reaches it.
func TestHS256SignedWithRSAPublicKeyIsRejected(t *testing.T) {
	testKeys(t)
	cfg, m := newRT(t, string(mustJSON(map[string]any{"keys": []any{map[string]any{"kid": "rsa", "pem": pubPEM(t, &rsaKey.PublicKey)}}})))
	der, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	for name, secret := range map[string][]byte{
		"PEM":   []byte(pubPEM(t, &rsaKey.PublicKey)),
		"DER":   der,
		"PKCS1": x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey),
	} {
		for _, kid := range []string{"", "rsa"} {
			hdr := map[string]any{"alg": "HS256"}
			if kid != "" {
				hdr["kid"] = kid
			}
			tok := sign(t, hdr, claimsValid(), secret)
			ctx, _ := do(t, cfg, bearer(tok))
			wantDenied(t, ctx, "algorithm not allowed")
			_ = name
		}
	}
	// The same claims signed properly pass.
	if _, st := do(t, cfg, bearer(sign(t, map[string]any{"alg": "RS256"}, claimsValid(), rsaKey))); st != api.Continue {
		t.Fatal("RS256 token refused")
	}
	if m.Count("denied_algorithm_not_allowed") != 6 {
		t.Fatalf("denied = %d", m.Count("denied_algorithm_not_allowed"))
	}
}

func TestKeyAlgRestrictsAlgorithms(t *testing.T) {
	testKeys(t)
	cfg, _ := newRT(t, string(mustJSON(map[string]any{
		"keys":       []any{map[string]any{"pem": pubPEM(t, &rsaKey.PublicKey), "alg": "PS256"}},
		"algorithms": []string{"PS256", "RS256"},
	})))
	if _, st := do(t, cfg, bearer(sign(t, map[string]any{"alg": "PS256"}, claimsValid(), rsaKey))); st != api.Continue {
		t.Fatal("PS256 refused")
	}
	ctx, _ := do(t, cfg, bearer(sign(t, map[string]any{"alg": "RS256"}, claimsValid(), rsaKey)))
	wantDenied(t, ctx, "algorithm not allowed")
	ctx, _ = do(t, cfg, bearer(sign(t, map[string]any{"alg": "RS512"}, claimsValid(), rsaKey)))
	wantDenied(t, ctx, "algorithm not allowed")
}

func TestTimeClaims(t *testing.T) {
	now := fixedNow.Unix()
	for _, tc := range []struct {
		name   string
		cfg    map[string]any
		claims map[string]any
		want   string // "" = allowed
	}{
		{"valid", nil, map[string]any{"exp": now + 10}, ""},
		{"expired", nil, map[string]any{"exp": now - 61}, "token expired"},
		{"expired within leeway", nil, map[string]any{"exp": now - 59}, ""},
		{"expired, no leeway", map[string]any{"leeway": "0s"}, map[string]any{"exp": now}, "token expired"},
		{"fractional exp", map[string]any{"leeway": "0s"}, map[string]any{"exp": float64(now) + 0.5}, ""},
		{"nbf in future", nil, map[string]any{"nbf": now + 61}, "token not yet valid"},
		{"nbf within leeway", nil, map[string]any{"nbf": now + 59}, ""},
		{"iat in future", nil, map[string]any{"iat": now + 120}, "token issued in the future"},
		{"iat within leeway", nil, map[string]any{"iat": now + 30}, ""},
		{"no exp accepted by default", nil, map[string]any{"sub": "x"}, ""},
		{"no exp with require_exp", map[string]any{"require_exp": true}, map[string]any{"sub": "x"}, "token has no expiry"},
		{"exp as string", nil, map[string]any{"exp": "tomorrow"}, "malformed token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := newRT(t, withHS(tc.cfg))
			ctx, st := do(t, cfg, bearer(sign(t, map[string]any{"alg": "HS256"}, tc.claims, hmacKey)))
			if tc.want == "" {
				if st != api.Continue {
					t.Fatalf("denied: %+v", ctx.Replied)
				}
				return
			}
			wantDenied(t, ctx, tc.want)
		})
	}
}

func withHS(extra map[string]any) string {
	cfg := map[string]any{"keys": []any{map[string]any{"secret": string(hmacKey)}}}
	for k, v := range extra {
		cfg[k] = v
	}
	return string(mustJSON(cfg))
}

func TestIssuerAndAudience(t *testing.T) {
	cfg, m := newRT(t, withHS(map[string]any{"issuers": []string{"https://idp.example"}, "audiences": []string{"api", "web"}}))
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   string
	}{
		{"match", map[string]any{"iss": "https://idp.example", "aud": "web"}, ""},
		{"aud list", map[string]any{"iss": "https://idp.example", "aud": []string{"x", "api"}}, ""},
		{"wrong iss", map[string]any{"iss": "https://evil.example", "aud": "api"}, "issuer not allowed"},
		{"no iss", map[string]any{"aud": "api"}, "issuer not allowed"},
		{"wrong aud", map[string]any{"iss": "https://idp.example", "aud": []string{"x"}}, "audience not allowed"},
		{"no aud", map[string]any{"iss": "https://idp.example"}, "audience not allowed"},
	} {
		ctx, st := do(t, cfg, bearer(sign(t, map[string]any{"alg": "HS512"}, tc.claims, hmacKey)))
		if tc.want == "" {
			if st != api.Continue {
				t.Fatalf("%s: denied %+v", tc.name, ctx.Replied)
			}
			continue
		}
		wantDenied(t, ctx, tc.want)
	}
	if m.Count("denied_issuer_not_allowed") != 2 || m.Count("denied_audience_not_allowed") != 2 {
		t.Fatal("metrics by reason")
	}
}

func TestMalformedAndOversizedTokens(t *testing.T) {
	cfg, _ := newRT(t, withHS(map[string]any{"max_token_size": 512}))
	good := sign(t, map[string]any{"alg": "HS256"}, claimsValid(), hmacKey)
	big := map[string]any{"pad": strings.Repeat("x", 1000)}
	for _, tc := range []struct{ name, tok, want string }{
		{"oversized", sign(t, map[string]any{"alg": "HS256"}, big, hmacKey), "token too large"},
		{"oversized header", b64([]byte(`{"alg":"HS256","x":"`+strings.Repeat("y", 2000)+`"}`)) + ".e30.c2ln", "token too large"},
		{"two segments", "abc.def", "malformed token"},
		{"four segments", good + ".x", "malformed token"},
		{"CRLF inside", strings.Replace(good, ".", "\r\n.", 1), "malformed token"},
		{"padding", good + "=", "malformed token"},
		{"standard base64", strings.Replace(good, "_", "/", 1) + "+", "malformed token"},
		{"unicode", good[:10] + "é" + good[10:], "malformed token"},
		{"header not JSON", b64([]byte("hello")) + ".e30.c2ln", "malformed token"},
		{"crit header", b64([]byte(`{"alg":"HS256","crit":["b64"],"b64":false}`)) + ".e30.c2ln", "malformed token"},
		{"empty bearer", "", "malformed token"},
	} {
		ctx, _ := do(t, cfg, bearer(tc.tok))
		wantDenied(t, ctx, tc.want)
	}
	// A big header segment under a larger max_token_size is still refused.
	cfg2, _ := newRT(t, withHS(map[string]any{"max_token_size": 65536}))
	ctx, _ := do(t, cfg2, bearer(b64([]byte(`{"alg":"HS256","x":"`+strings.Repeat("y", 2000)+`"}`))+".e30.c2ln"))
	wantDenied(t, ctx, "malformed token")
}

func TestMissingTokenChallenge(t *testing.T) {
	cfg, m := newRT(t, withHS(nil))
	for _, req := range []*fakeframework.Request{
		fakeframework.NewRequest("GET", "/"),
		fakeframework.NewRequest("GET", "/", "authorization", "Basic dXNlcjpwYXNz"),
	} {
		ctx, _ := do(t, cfg, req)
		wantDenied(t, ctx, "missing token")
	}
	if m.Count("denied_missing_token") != 2 {
		t.Fatal("metric")
	}
}
