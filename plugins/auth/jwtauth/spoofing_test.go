package jwtauth

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// A request authenticated by an earlier plugin makes jwt-auth step aside
// (anonymous_consumer, Kong's OR), but the claim headers jwt-auth vouches for
// must still be stripped: otherwise a caller with a valid API key can send
// "x-jwt-sub: admin" and the upstream trusts it.
func TestSkippedRequestCannotSpoofForwardedClaims(t *testing.T) {
	cfg, m := newRT(t, withHS(map[string]any{
		"anonymous_consumer": "guest",
		"forward_claims": []any{
			map[string]any{"claim": "sub", "header": "x-jwt-sub"},
			map[string]any{"claim": "roles", "header": "x-jwt-roles"},
		},
	}))
	for _, tc := range []struct {
		name    string
		headers []string
	}{
		{"one spoofed claim header", []string{"x-jwt-sub", "admin"}},
		{"every claim header spoofed", []string{"x-jwt-sub", "admin", "x-jwt-roles", "root"}},
		{"repeated spoofed header", []string{"x-jwt-sub", "admin", "x-jwt-sub", "root"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := fakeframework.NewRequest("GET", "/", tc.headers...)
			ctx := fakeframework.NewContext("jwt-auth", req)
			ctx.SetConsumer(&api.Consumer{Name: "bob"}) // e.g. key-auth ran first
			if st := (&filter{rt: cfg.rt}).OnReceive(ctx, req, nil, nil); st != api.Continue {
				t.Fatalf("status %v, reply %+v", st, ctx.Replied)
			}
			for _, h := range []string{"x-jwt-sub", "x-jwt-roles"} {
				if v, ok := req.Get(h); ok {
					t.Errorf("%s = %q reached the upstream", h, v)
				}
			}
		})
	}
	if m.Count("skipped") != 3 {
		t.Fatalf("skipped = %d", m.Count("skipped"))
	}
}

// hide_credentials removes the token from every configured source, not only
// the one it was read from, and leaves values of other schemes alone.
func TestHideCredentialsRemovesEveryCopy(t *testing.T) {
	testKeys(t)
	tok := sign(t, map[string]any{"alg": "HS256"}, claimsValid(), hmacKey)
	cfg, _ := newRT(t, withHS(map[string]any{
		"hide_credentials": true,
		"from": []any{
			map[string]any{"header": "authorization", "prefix": "Bearer "},
			map[string]any{"header": "x-jwt"},
			map[string]any{"query": "access_token"},
			map[string]any{"cookie": "jwt"},
		},
	}))
	for _, tc := range []struct {
		name       string
		path       string
		headers    []string
		wantPath   string
		wantHeader map[string]string // "" = absent
	}{
		{"header and query", "/p?access_token=" + tok + "&a=1", []string{"authorization", "Bearer " + tok},
			"/p?a=1", map[string]string{"authorization": ""}},
		{"header and percent-encoded query name", "/p?access%5Ftoken=" + tok, []string{"authorization", "Bearer " + tok},
			"/p", map[string]string{"authorization": ""}},
		{"header and cookie", "/", []string{"authorization", "Bearer " + tok, "cookie", "a=1; jwt=" + tok},
			"/", map[string]string{"authorization": "", "cookie": "a=1"}},
		{"custom header copy", "/", []string{"authorization", "Bearer " + tok, "x-jwt", tok},
			"/", map[string]string{"authorization": "", "x-jwt": ""}},
		{"query used, other scheme in authorization kept", "/?access_token=" + tok, []string{"authorization", "Basic eDp5", "cookie", "jwt=" + tok},
			"/", map[string]string{"authorization": "Basic eDp5", "cookie": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := fakeframework.NewRequest("GET", tc.path, tc.headers...)
			ctx, st := do(t, cfg, req)
			if st != api.Continue {
				t.Fatalf("denied %+v", ctx.Replied)
			}
			if req.Path() != tc.wantPath {
				t.Errorf("path %q, want %q", req.Path(), tc.wantPath)
			}
			for h, want := range tc.wantHeader {
				got, ok := req.Get(h)
				if want == "" && ok {
					t.Errorf("%s = %q not hidden", h, got)
				} else if want != "" && got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
		})
	}
}
