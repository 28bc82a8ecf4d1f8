package jwtauth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// Test keys are generated once: RSA generation is slow under -race.
var (
	keysOnce sync.Once
	rsaKey   *rsa.PrivateKey
	rsaKey2  *rsa.PrivateKey
	ecKeys   map[string]*ecdsa.PrivateKey
	edKey    ed25519.PrivateKey
	hmacKey  = []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") // 64 bytes
)

func testKeys(t testing.TB) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if rsaKey2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		ecKeys = map[string]*ecdsa.PrivateKey{}
		for alg, c := range map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()} {
			k, err := ecdsa.GenerateKey(c, rand.Reader)
			if err != nil {
				panic(err)
			}
			ecKeys[alg] = k
		}
		if _, edKey, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
	})
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// sign builds a compact JWS with any header (so tests can forge odd ones).
func sign(t testing.TB, hdr map[string]any, cl map[string]any, key any) string {
	t.Helper()
	input := b64(mustJSON(hdr)) + "." + b64(mustJSON(cl))
	alg, _ := hdr["alg"].(string)
	sig, err := jwsbb.Sign(key, alg, []byte(input), rand.Reader)
	if err != nil {
		t.Fatalf("sign %s: %v", alg, err)
	}
	return input + "." + b64(sig)
}

// signKey returns the signing key for an algorithm.
func signKey(alg string) any {
	switch alg[:2] {
	case "HS":
		return hmacKey
	case "RS", "PS":
		return rsaKey
	case "ES":
		return ecKeys[alg]
	}
	return edKey
}

func pubPEM(t testing.TB, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// jwksJSON publishes public keys as a JWK Set with the given kids.
func jwksJSON(t testing.TB, keys map[string]any) []byte {
	t.Helper()
	set := jwk.NewSet()
	for kid, raw := range keys {
		k, err := jwk.Import(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Set(jwk.KeyIDKey, kid); err != nil {
			t.Fatal(err)
		}
		if err := set.AddKey(k); err != nil {
			t.Fatal(err)
		}
	}
	return mustJSON(set)
}

var fixedNow = time.Unix(1_900_000_000, 0)

// newRT decodes and initializes a config like the framework does.
func newRT(t testing.TB, cfgJSON string) (*Config, *fakeframework.Env) {
	t.Helper()
	cfg, m, err := tryConfig(cfgJSON, false)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.rt.now = func() time.Time { return fixedNow }
	t.Cleanup(cfg.Destroy)
	return cfg, m
}

func tryConfig(cfgJSON string, route bool, chain ...api.ConsumerCredential) (*Config, *fakeframework.Env, error) {
	return initConfig(cfgJSON, route, false, chain...)
}

// initConfig is tryConfig, in check-only mode (ConfigEnv.CheckOnly) when checking.
func initConfig(cfgJSON string, route, checking bool, chain ...api.ConsumerCredential) (*Config, *fakeframework.Env, error) {
	cfg := newConfig().(*Config)
	if err := config.DecodeStrict([]byte(cfgJSON), cfg); err != nil {
		return nil, nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	m := fakeframework.NewEnv(Name, route)
	m.ChainConsumers = chain
	m.Checking = checking
	if err := cfg.Init(m); err != nil {
		return nil, nil, err
	}
	return cfg, m, nil
}

// do runs one request through the filter.
func do(t testing.TB, cfg *Config, req *fakeframework.Request) (*fakeframework.Context, api.Status) {
	t.Helper()
	ctx := fakeframework.NewContext("jwt-auth", req)
	st := (&filter{rt: cfg.rt}).OnReceive(ctx, req, nil, nil)
	if (st == api.Stop) != (ctx.Replied != nil) {
		t.Fatalf("status %v but reply %+v", st, ctx.Replied)
	}
	return ctx, st
}

func bearer(tok string) *fakeframework.Request {
	return fakeframework.NewRequest("GET", "/", "authorization", "Bearer "+tok)
}

// claimsValid is a claim set valid at fixedNow.
func claimsValid() map[string]any {
	return map[string]any{"sub": "alice", "iss": "https://idp.example", "aud": "api", "exp": fixedNow.Unix() + 300, "iat": fixedNow.Unix() - 10}
}

// wantDenied checks a 401 with the given reason.
func wantDenied(t testing.TB, ctx *fakeframework.Context, reason string) {
	t.Helper()
	r := ctx.Replied
	if r == nil {
		t.Fatalf("request passed, want 401 %q", reason)
	}
	if r.Code != 401 || r.Body != reason+"\n" {
		t.Fatalf("got %d %q, want 401 %q", r.Code, r.Body, reason)
	}
	ch, _ := r.Headers.Get("www-authenticate")
	if reason == "missing token" {
		if ch != `Bearer realm="moe"` {
			t.Fatalf("challenge %q", ch)
		}
	} else if want := `Bearer realm="moe", error="invalid_token", error_description="` + reason + `"`; ch != want {
		t.Fatalf("challenge %q, want %q", ch, want)
	}
}

var smallRSAKey *rsa.PrivateKey

func smallRSA(t testing.TB) *rsa.PrivateKey {
	if smallRSAKey == nil {
		k, err := rsa.GenerateKey(rand.Reader, 1024)
		if err != nil {
			t.Fatal(err)
		}
		smallRSAKey = k
	}
	return smallRSAKey
}
