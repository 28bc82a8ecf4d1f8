package jwtauth

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// jwksServer serves a JWKS that tests can change or break.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	body    []byte
	status  int
	fetches atomic.Int64
}

func newJWKSServer(t *testing.T, body []byte, status int) *jwksServer {
	s := &jwksServer{body: body, status: status}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		w.WriteHeader(s.status)
		_, _ = w.Write(s.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(body []byte, status int) {
	s.mu.Lock()
	s.body, s.status = body, status
	s.mu.Unlock()
}

func rsTok(t *testing.T, kid string) string {
	return sign(t, map[string]any{"alg": "RS256", "kid": kid}, claimsValid(), rsaKey)
}

func TestJWKSFromFile(t *testing.T) {
	testKeys(t)
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, jwksJSON(t, map[string]any{"k1": &rsaKey.PublicKey, "e1": &ecKeys["ES256"].PublicKey}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _ := newRT(t, `{"jwks":{"file":"`+path+`"}}`)
	if _, st := do(t, cfg, bearer(rsTok(t, "k1"))); st != api.Continue {
		t.Fatal("RS256 from file JWKS refused")
	}
	if _, st := do(t, cfg, bearer(sign(t, map[string]any{"alg": "ES256", "kid": "e1"}, claimsValid(), ecKeys["ES256"]))); st != api.Continue {
		t.Fatal("ES256 from file JWKS refused")
	}
	// kid k1 is an RSA key: an ES256 token naming it is refused.
	ctx, _ := do(t, cfg, bearer(sign(t, map[string]any{"alg": "ES256", "kid": "k1"}, claimsValid(), ecKeys["ES256"])))
	wantDenied(t, ctx, "algorithm not allowed")
}

func TestJWKSFromURL(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, jwksJSON(t, map[string]any{"k1": &rsaKey.PublicKey}), 200)
	cfg, m := newRT(t, `{"jwks":{"url":"`+srv.URL+`/jwks"}}`)
	tb.Eventually(t, "first fetch", func() bool { return cfg.rt.jwks.keys() != nil })
	if _, st := do(t, cfg, bearer(rsTok(t, "k1"))); st != api.Continue {
		t.Fatal("refused")
	}
	if m.Count("jwks_fetch_ok") != 1 {
		t.Fatalf("jwks_fetch_ok = %d", m.Count("jwks_fetch_ok"))
	}
}

func TestJWKSDownAtStartThenUp(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, []byte("unavailable"), 503)
	start := time.Now()
	cfg, m := newRT(t, `{"jwks":{"url":"`+srv.URL+`","retry_backoff":"10ms","retry_backoff_max":"20ms"}}`)
	if time.Since(start) > time.Second {
		t.Fatal("Init waited for the JWKS endpoint")
	}
	ctx, _ := do(t, cfg, bearer(rsTok(t, "k1")))
	wantDenied(t, ctx, "jwks unavailable")
	tb.Eventually(t, "retries", func() bool { return srv.fetches.Load() >= 3 })
	ctx, _ = do(t, cfg, bearer(rsTok(t, "k1")))
	wantDenied(t, ctx, "jwks unavailable")

	srv.set(jwksJSON(t, map[string]any{"k1": &rsaKey.PublicKey}), 200)
	tb.Eventually(t, "recovery", func() bool { return cfg.rt.jwks.keys() != nil })
	if _, st := do(t, cfg, bearer(rsTok(t, "k1"))); st != api.Continue {
		t.Fatal("refused after the JWKS came up")
	}
	if m.Count("jwks_fetch_failed") < 2 || m.Count("denied_jwks_unavailable") != 2 {
		t.Fatalf("metrics failed=%d unavailable=%d", m.Count("jwks_fetch_failed"), m.Count("denied_jwks_unavailable"))
	}
}

func TestJWKSDeadPortDoesNotBlock(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", hosttest.ClosedPort(t))
	cfg, _ := newRT(t, `{"jwks":{"url":"http://`+addr+`/jwks","retry_backoff":"5ms","retry_backoff_max":"10ms"}}`)
	ctx, _ := do(t, cfg, bearer(sign(t, map[string]any{"alg": "HS256"}, claimsValid(), hmacKey)))
	wantDenied(t, ctx, "jwks unavailable")
}

func TestUnknownKidRefreshIsRateLimited(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, jwksJSON(t, map[string]any{"k1": &rsaKey.PublicKey}), 200)
	cfg, m := newRT(t, `{"jwks":{"url":"`+srv.URL+`","min_refresh_interval":"300ms","refresh_interval":"1h"}}`)
	tb.Eventually(t, "first fetch", func() bool { return cfg.rt.jwks.keys() != nil })
	// The identity provider rotates in k2.
	srv.set(jwksJSON(t, map[string]any{"k1": &rsaKey.PublicKey, "k2": &rsaKey2.PublicKey}), 200)
	tok2 := sign(t, map[string]any{"alg": "RS256", "kid": "k2"}, claimsValid(), rsaKey2)

	// Right after a fetch: refused and no new fetch (rate limited).
	for i := 0; i < 20; i++ {
		ctx, _ := do(t, cfg, bearer(tok2))
		wantDenied(t, ctx, "unknown key id")
	}
	time.Sleep(50 * time.Millisecond)
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("fetches = %d within min_refresh_interval", n)
	}
	time.Sleep(300 * time.Millisecond)
	for i := 0; i < 20; i++ {
		do(t, cfg, bearer(tok2))
	}
	tb.Eventually(t, "k2", func() bool { return cfg.rt.jwks.keys().hasKid("k2") })
	if _, st := do(t, cfg, bearer(tok2)); st != api.Continue {
		t.Fatal("k2 refused after refresh")
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("fetches = %d, want 2 (one refresh for 20 unknown-kid requests)", n)
	}
	if m.Count("jwks_refresh_requested") < 20 {
		t.Fatal("metric")
	}
}

func TestJWKSStaleWhileError(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, jwksJSON(t, map[string]any{"k1": &rsaKey.PublicKey}), 200)
	cfg, m := newRT(t, `{"jwks":{"url":"`+srv.URL+`","min_refresh_interval":"0s","retry_backoff":"5ms","retry_backoff_max":"10ms"}}`)
	tb.Eventually(t, "first fetch", func() bool { return cfg.rt.jwks.keys() != nil })
	srv.set([]byte("{broken"), 200)
	do(t, cfg, bearer(rsTok(t, "unknown"))) // asks for a refresh, which fails
	tb.Eventually(t, "failed refreshes", func() bool { return m.Count("jwks_fetch_failed") >= 2 })
	if _, st := do(t, cfg, bearer(rsTok(t, "k1"))); st != api.Continue {
		t.Fatal("previous keys not served while the JWKS is broken")
	}
}

func TestDestroyStopsRefresher(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, []byte("x"), 500)
	cfg, _, err := tryConfig(`{"jwks":{"url":"`+srv.URL+`","retry_backoff":"5ms","retry_backoff_max":"5ms"}}`, false)
	if err != nil {
		t.Fatal(err)
	}
	tb.Eventually(t, "retries", func() bool { return srv.fetches.Load() >= 2 })
	cfg.Destroy()
	select {
	case <-cfg.rt.jwks.done:
	case <-time.After(2 * time.Second):
		t.Fatal("refresher still running after Destroy")
	}
	// A fetch the refresher cancelled may still reach the server's handler after done is
	// closed (the request was already on the wire), so let in-flight requests land first,
	// then require that no new fetch starts.
	time.Sleep(30 * time.Millisecond)
	n := srv.fetches.Load()
	time.Sleep(60 * time.Millisecond)
	if got := srv.fetches.Load(); got != n {
		t.Fatalf("%d fetches started after Destroy", got-n)
	}
	cfg.Destroy() // idempotent
}

func TestJWKSSkipsUnusableKeys(t *testing.T) {
	testKeys(t)
	body := []byte(`{"keys":[{"kty":"RSA","kid":"enc","use":"enc","n":"` + b64(rsaKey.N.Bytes()) + `","e":"AQAB"},` +
		`{"kty":"XYZ","kid":"weird"},` +
		`{"kty":"RSA","kid":"k1","alg":"RS256","n":"` + b64(rsaKey.N.Bytes()) + `","e":"AQAB"}]}`)
	ks, skipped, err := parseJWKS(body, algsAll)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks.keys) != 1 || ks.keys[0].kid != "k1" || ks.keys[0].algs != algRS256 {
		t.Fatalf("keys %+v skipped %v", ks.keys, skipped)
	}
	if _, _, err := parseJWKS([]byte(`{"keys":[]}`), algsAll); err == nil {
		t.Fatal("empty JWKS accepted")
	}
}

// Verification from many goroutines while the JWKS is swapped underneath
// (run with -race).
func TestConcurrentVerifyDuringRefresh(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, jwksJSON(t, map[string]any{"k1": &rsaKey.PublicKey}), 200)
	cfg, _ := newRT(t, `{"jwks":{"url":"`+srv.URL+`","min_refresh_interval":"0s"},"keys":[{"secret":"`+string(hmacKey)+`"}],
		"forward_claims":[{"claim":"sub","header":"x-sub"}]}`)
	tb.Eventually(t, "first fetch", func() bool { return cfg.rt.jwks.keys() != nil })
	toks := []string{rsTok(t, "k1"), sign(t, map[string]any{"alg": "HS512"}, claimsValid(), hmacKey)}
	unknown := rsTok(t, "nope")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				req := bearer(toks[(g+i)%2])
				ctx := fakeframework.NewContext("jwt-auth", req)
				if (&filter{rt: cfg.rt}).OnReceive(ctx, req, nil, nil) != api.Continue {
					t.Errorf("denied: %+v", ctx.Replied)
					return
				}
				if v, _ := req.Get("x-sub"); v != "alice" {
					t.Errorf("x-sub %q", v)
					return
				}
				if i%10 == 0 {
					sc := getScratch()
					cfg.rt.verify(unknown, sc) // kicks refreshes
					putScratch(sc)
				}
			}
		}(g)
	}
	wg.Wait()
}
