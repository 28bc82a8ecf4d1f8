package jwtauth

import (
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// Tokens from the comment of envoy/examples/jwt-auth.yaml.
const (
	exampleGood = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImV4YW1wbGUtaHMifQ.eyJzdWIiOiJhbGljZSIsImlzcyI6Imh0dHBzOi8vaWRwLmV4YW1wbGUiLCJhdWQiOiJtb2UtZXhhbXBsZSIsInRpZXIiOiJnb2xkIn0.c4_QJIKjucFxkkAnnPlhviEc2X0MjM6KYjdmC7PdXSM"
	exampleOld  = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImV4YW1wbGUtaHMifQ.eyJzdWIiOiJhbGljZSIsImlzcyI6Imh0dHBzOi8vaWRwLmV4YW1wbGUiLCJhdWQiOiJtb2UtZXhhbXBsZSIsImV4cCI6MTcwMDAwMDAwMH0.3Pgkz1A-cOUgNseERh2K633O68j1zNDXwKZ-DK9UByE"
	// sub "bob": a chain-level consumer (the moe config's consumers list).
	exampleBob = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImV4YW1wbGUtaHMifQ.eyJzdWIiOiJib2IiLCJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIiwiYXVkIjoibW9lLWV4YW1wbGUifQ.4Lz-5-pJoRkothqG9LrThxbPnIZ4p23fj7wRREYhPu8"
)

// TestE2EExample runs envoy/examples/jwt-auth.yaml through moe-host and the
// real libgolang.so with the requests listed at the top of that file.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/jwt-auth.yaml")

	resp, body := hosttest.Get(t, h.URL+"/")
	if resp.StatusCode != 401 || resp.Header.Get("www-authenticate") != `Bearer realm="example"` || body != "missing token\n" {
		t.Fatalf("no token: %d %q %q", resp.StatusCode, resp.Header.Get("www-authenticate"), body)
	}

	resp, _ = hosttest.Get(t, h.URL+"/", "authorization", "Bearer "+exampleGood, "x-consumer-name", "root", "x-jwt-tier", "platinum")
	e := hosttest.DecodeEcho(t, resp)
	if e.Header("x-consumer-name") != "alice-app" || e.Header("x-jwt-sub") != "alice" || e.Header("x-jwt-tier") != "gold" {
		t.Fatalf("upstream headers: %v", e.Headers)
	}
	if len(e.Values("X-Consumer-Name")) != 1 || len(e.Values("X-Jwt-Tier")) != 1 {
		t.Fatalf("spoofed headers kept: %v", e.Headers)
	}
	if e.Header("authorization") != "" {
		t.Fatal("hide_credentials: token reached the upstream")
	}

	resp, _ = hosttest.Get(t, h.URL+"/items?x=1&access_token="+exampleGood+"&y=2")
	e = hosttest.DecodeEcho(t, resp)
	if e.Header("x-consumer-name") != "alice-app" || e.URI != "/items?x=1&y=2" {
		t.Fatalf("query token: consumer %q path %q", e.Header("x-consumer-name"), e.URI)
	}

	// bob-app is a chain-level consumer, identified by jwt-auth through the
	// real host and library.
	resp, _ = hosttest.Get(t, h.URL+"/", "authorization", "Bearer "+exampleBob, "x-consumer-name", "alice-app")
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "bob-app" || len(e.Values("X-Consumer-Name")) != 1 || e.Header("x-jwt-sub") != "bob" {
		t.Fatalf("chain consumer: upstream headers %v", e.Headers)
	}

	resp, body = hosttest.Get(t, h.URL+"/", "authorization", "Bearer "+exampleOld)
	if resp.StatusCode != 401 || body != "token expired\n" ||
		resp.Header.Get("www-authenticate") != `Bearer realm="example", error="invalid_token", error_description="token expired"` {
		t.Fatalf("expired: %d %q %q", resp.StatusCode, body, resp.Header.Get("www-authenticate"))
	}

	// Attacks through the real host.
	parts := strings.Split(exampleGood, ".")
	for _, tc := range []struct {
		name, reason string
		hdr          []string
	}{
		{"alg none", "algorithm not allowed", []string{"authorization", "Bearer " + b64([]byte(`{"alg":"none"}`)) + "." + parts[1] + ".c2ln"}},
		{"unsecured token", "algorithm not allowed", []string{"authorization", "Bearer " + b64([]byte(`{"alg":"none"}`)) + "." + parts[1] + "."}},
		{"tampered payload", "invalid signature", []string{"authorization", "Bearer " + parts[0] + "." + b64([]byte(`{"sub":"alice","iss":"https://idp.example","aud":"moe-example","tier":"platinum"}`)) + "." + parts[2]}},
		{"oversized token", "token too large", []string{"authorization", "Bearer " + strings.Repeat("a", 9000)}},
		{"unicode in token", "malformed token", []string{"authorization", "Bearer " + exampleGood[:20] + "é" + exampleGood[20:]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := hosttest.Get(t, h.URL+"/", tc.hdr...)
			if resp.StatusCode != 401 || body != tc.reason+"\n" {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
		})
	}
	// CRLF in a query token cannot inject anything.
	resp, body = hosttest.Get(t, h.URL+"/?access_token="+parts[0]+"%0d%0ax-admin:%201")
	if resp.StatusCode != 401 || body != "malformed token\n" {
		t.Fatalf("CRLF token: %d %q", resp.StatusCode, body)
	}

	// Per-route anonymous access on /public/ with the filter's keys.
	resp, _ = hosttest.Get(t, h.URL+"/public/x")
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "guest" {
		t.Fatalf("anonymous route: %v", e.Headers)
	}
	resp, _ = hosttest.Get(t, h.URL+"/public/x", "authorization", "Bearer "+exampleGood)
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "alice-app" {
		t.Fatalf("token on the anonymous route: %v", e.Headers)
	}
	resp, _ = hosttest.Get(t, h.URL+"/public/x", "authorization", "Bearer "+exampleBob)
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "bob-app" {
		t.Fatalf("chain consumer on the anonymous route: %v", e.Headers)
	}
	resp, _ = hosttest.Get(t, h.URL+"/public/x", "authorization", "Bearer "+exampleOld)
	if resp.StatusCode != 401 {
		t.Fatalf("expired token on the anonymous route: %d", resp.StatusCode)
	}

	for name, min := range map[string]int64{
		"moe_jwt_auth_allowed": 5, "moe_jwt_auth_anonymous": 1, "moe_jwt_auth_denied_missing_token": 1,
		"moe_jwt_auth_denied_expired": 2, "moe_jwt_auth_denied_invalid_signature": 1,
		"moe_jwt_auth_denied_algorithm_not_allowed": 1, "moe_jwt_auth_denied_token_too_large": 1,
	} {
		if got := h.Counter(t, name); got < min {
			t.Errorf("%s = %d, want >= %d", name, got, min)
		}
	}
}

// A JWKS endpoint that is down when the host starts: the host starts anyway,
// requests get 401 "jwks unavailable" (fail closed), and tokens verify once the
// endpoint comes up.
func TestE2EJWKSDownAtStart(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, []byte("down"), 503)
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: []hosttest.Plugin{{
		Name:   "jwt-auth",
		Config: map[string]any{"jwks": map[string]any{"url": srv.URL + "/jwks", "retry_backoff": "20ms", "retry_backoff_max": "50ms"}},
	}}})
	tok := sign(t, map[string]any{"alg": "RS256", "kid": "k1"}, map[string]any{"sub": "alice", "exp": time.Now().Unix() + 300}, rsaKey)
	resp, body := hosttest.Get(t, h.URL+"/", "authorization", "Bearer "+tok)
	if resp.StatusCode != 401 || body != "jwks unavailable\n" {
		t.Fatalf("JWKS down: %d %q", resp.StatusCode, body)
	}
	srv.set(jwksJSON(t, map[string]any{"k1": &rsaKey.PublicKey}), 200)
	if !tb.Poll(10*time.Second, func() bool {
		resp, body = hosttest.Get(t, h.URL+"/", "authorization", "Bearer "+tok)
		resp.Body.Close()
		return resp.StatusCode == 200
	}) {
		t.Fatalf("still %d %q after the JWKS came up", resp.StatusCode, body)
	}
	if h.Counter(t, "moe_jwt_auth_denied_jwks_unavailable") < 1 || h.Counter(t, "moe_jwt_auth_jwks_fetch_ok") < 1 {
		t.Errorf("stats: %v", h.Stats(t))
	}
}

func TestE2EBadConfigIsRefused(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{Plugins: []hosttest.Plugin{{
		Name:   "jwt-auth",
		Config: map[string]any{"keys": []any{map[string]any{"secret": "too-short-secret"}}},
	}}})
	for _, want := range []string{"jwt-auth", "keys[0]", "too short"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "too-short-secret") {
		t.Errorf("the refusal prints the secret:\n%s", out)
	}
}
