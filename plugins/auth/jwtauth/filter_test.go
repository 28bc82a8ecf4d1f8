package jwtauth

import (
	"fmt"
	"strings"
	"time"

	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestTokenSourcesInOrderAndHideCredentials(t *testing.T) {
	testKeys(t)
	tok := sign(t, map[string]any{"alg": "HS256"}, claimsValid(), hmacKey)
	cfg, _ := newRT(t, withHS(map[string]any{
		"hide_credentials": true,
		"from": []any{
			map[string]any{"header": "Authorization", "prefix": "Bearer "},
			map[string]any{"header": "x-jwt"},
			map[string]any{"query": "access_token"},
			map[string]any{"cookie": "jwt"},
		},
	}))
	for _, tc := range []struct {
		name  string
		req   *fakeframework.Request
		check func(t *testing.T, h *fakeframework.Request)
	}{
		{"bearer, case-insensitive scheme", fakeframework.NewRequest("GET", "/", "authorization", "bearer "+tok), func(t *testing.T, h *fakeframework.Request) {
			if _, ok := h.Get("authorization"); ok {
				t.Fatal("authorization not hidden")
			}
		}},
		{"custom header", fakeframework.NewRequest("GET", "/", "x-jwt", tok), func(t *testing.T, h *fakeframework.Request) {
			if _, ok := h.Get("x-jwt"); ok {
				t.Fatal("x-jwt not hidden")
			}
		}},
		{"query", fakeframework.NewRequest("GET", "/p?a=1&access_token="+tok+"&b=2"), func(t *testing.T, h *fakeframework.Request) {
			if h.Path() != "/p?a=1&b=2" {
				t.Fatalf("path %q", h.Path())
			}
		}},
		{"cookie", fakeframework.NewRequest("GET", "/", "cookie", "a=1; jwt="+tok+"; b=2"), func(t *testing.T, h *fakeframework.Request) {
			if v, _ := h.Get("cookie"); v != "a=1; b=2" {
				t.Fatalf("cookie %q", v)
			}
		}},
		{"Basic header skipped, query used", fakeframework.NewRequest("GET", "/?access_token="+tok, "authorization", "Basic eDp5"), func(t *testing.T, h *fakeframework.Request) {
			if h.Path() != "/" {
				t.Fatalf("path %q", h.Path())
			}
			if v, _ := h.Get("authorization"); v != "Basic eDp5" {
				t.Fatal("unrelated authorization header touched")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, st := do(t, cfg, tc.req)
			if st != api.Continue {
				t.Fatalf("denied %+v", ctx.Replied)
			}
			tc.check(t, tc.req)
		})
	}
	// Two token headers: neither is trusted.
	req := fakeframework.NewRequest("GET", "/", "x-jwt", tok, "x-jwt", "other")
	ctx, _ := do(t, cfg, req)
	wantDenied(t, ctx, "malformed token")
	// The first source present wins even when its token is bad.
	ctx, _ = do(t, cfg, fakeframework.NewRequest("GET", "/?access_token="+tok, "x-jwt", "garbage"))
	wantDenied(t, ctx, "malformed token")
}

func TestForwardClaimsAndInjection(t *testing.T) {
	cfg, _ := newRT(t, withHS(map[string]any{
		"forward_claims": []any{
			map[string]any{"claim": "sub", "header": "x-jwt-sub"},
			map[string]any{"claim": "tier", "header": "x-jwt-tier"},
			map[string]any{"claim": "org.id", "header": "x-jwt-org"},
			map[string]any{"claim": "roles", "header": "x-jwt-roles"},
			map[string]any{"claim": "exp", "header": "x-jwt-exp"},
			map[string]any{"claim": "admin", "header": "x-jwt-admin"},
			map[string]any{"claim": "name", "header": "x-jwt-name"},
		},
	}))
	cl := claimsValid()
	cl["tier"] = "gold\r\nx-injected: 1"
	cl["org"] = map[string]any{"id": 42}
	cl["roles"] = []string{"a", "b"}
	cl["admin"] = true
	cl["name"] = "Zoë"
	req := bearer(sign(t, map[string]any{"alg": "HS256"}, cl, hmacKey))
	req.Set("x-jwt-tier", "spoofed")
	req.Set("x-jwt-missing", "kept")
	ctx, st := do(t, cfg, req)
	if st != api.Continue {
		t.Fatalf("denied %+v", ctx.Replied)
	}
	want := map[string]string{"x-jwt-sub": "alice", "x-jwt-org": "42", "x-jwt-roles": "a,b", "x-jwt-exp": "1900000300", "x-jwt-admin": "true", "x-jwt-name": "Zoë"}
	for h, v := range want {
		if got, _ := req.Get(h); got != v {
			t.Errorf("%s = %q, want %q", h, got, v)
		}
	}
	if v, ok := req.Get("x-jwt-tier"); ok {
		t.Errorf("claim with CRLF forwarded or spoofed header kept: %q", v)
	}
	if _, ok := req.Get("x-injected"); ok {
		t.Error("header injected")
	}
}

func TestConsumerMapping(t *testing.T) {
	consumers := []any{
		map[string]any{"name": "alice-app", "claim_value": "alice", "group": "gold"},
		map[string]any{"name": "bob"},
	}
	cfg, m := newRT(t, withHS(map[string]any{"consumer_claim": "sub", "consumers": consumers}))
	for _, tc := range []struct {
		sub      any
		consumer string
		deny     string
	}{
		{"alice", "alice-app", ""},
		{"bob", "bob", ""},
		{"mallory", "", "unknown consumer"},
		{nil, "", "unknown consumer"},
		{"bob\r\nx: y", "", "unknown consumer"},
	} {
		cl := claimsValid()
		if tc.sub == nil {
			delete(cl, "sub")
		} else {
			cl["sub"] = tc.sub
		}
		req := bearer(sign(t, map[string]any{"alg": "HS256"}, cl, hmacKey))
		req.Set("x-consumer-name", "spoofed")
		ctx, st := do(t, cfg, req)
		if tc.deny != "" {
			wantDenied(t, ctx, tc.deny)
			continue
		}
		if st != api.Continue || ctx.Consumer() == nil || ctx.Consumer().Name != tc.consumer {
			t.Fatalf("sub %v: consumer %+v", tc.sub, ctx.Consumer())
		}
		if v, _ := req.Get("x-consumer-name"); v != tc.consumer {
			t.Fatalf("x-consumer-name %q", v)
		}
	}
	if m.Count("denied_unknown_consumer") != 3 || m.Count("allowed") != 2 {
		t.Fatal("metrics")
	}

	// Without a consumer list the consumer is named after the claim.
	cfg2, _ := newRT(t, withHS(map[string]any{"consumer_claim": "sub", "consumer_header": ""}))
	req := bearer(sign(t, map[string]any{"alg": "HS256"}, claimsValid(), hmacKey))
	req.Set("x-consumer-name", "untouched")
	ctx, _ := do(t, cfg2, req)
	if ctx.Consumer() == nil || ctx.Consumer().Name != "alice" {
		t.Fatalf("derived consumer %+v", ctx.Consumer())
	}
	if v, _ := req.Get("x-consumer-name"); v != "untouched" {
		t.Fatal("consumer header written although disabled")
	}
}

func TestAnonymousConsumerOnlyWithoutToken(t *testing.T) {
	cfg, m := newRT(t, withHS(map[string]any{
		"anonymous_consumer": "guest",
		"forward_claims":     []any{map[string]any{"claim": "sub", "header": "x-jwt-sub"}},
	}))
	req := fakeframework.NewRequest("GET", "/", "x-jwt-sub", "admin")
	ctx, st := do(t, cfg, req)
	if st != api.Continue || ctx.Consumer().Name != "guest" {
		t.Fatalf("anonymous: %v %+v", st, ctx.Consumer())
	}
	if _, ok := req.Get("x-jwt-sub"); ok {
		t.Fatal("spoofed claim header kept for anonymous request")
	}
	if v, _ := req.Get("x-consumer-name"); v != "guest" {
		t.Fatalf("x-consumer-name %q", v)
	}
	// A bad token is not downgraded to anonymous.
	ctx, _ = do(t, cfg, bearer(sign(t, map[string]any{"alg": "HS256"}, claimsValid(), []byte(strings.Repeat("k", 64)))))
	wantDenied(t, ctx, "invalid signature")
	if m.Count("anonymous") != 1 {
		t.Fatal("anonymous metric")
	}
	// With anonymous access on, a caller authenticated by an earlier plugin
	// passes (OR of auth plugins), and its consumer is kept.
	req = fakeframework.NewRequest("GET", "/")
	ctx = fakeframework.NewContext("jwt-auth", req)
	ctx.SetConsumer(&api.Consumer{Name: "bob"})
	if st := (&filter{rt: cfg.rt}).OnReceive(ctx, req, nil, nil); st != api.Continue || ctx.Consumer().Name != "bob" {
		t.Fatal("earlier authentication not honoured")
	}
	if m.Count("skipped") != 1 {
		t.Fatal("skipped metric")
	}
}

func TestRouteConfigInheritsKeys(t *testing.T) {
	parent, _ := newRT(t, withHS(map[string]any{
		"issuers":        []string{"https://idp.example"},
		"forward_claims": []any{map[string]any{"claim": "sub", "header": "x-jwt-sub"}},
	}))
	route, _, err := tryConfig(`{"anonymous_consumer":"guest","audiences":["api"]}`, true)
	if err != nil {
		t.Fatal(err)
	}
	merged := merge(parent, route).(*Config)
	merged.rt.now = func() time.Time { return fixedNow }
	req := bearer(sign(t, map[string]any{"alg": "HS256"}, claimsValid(), hmacKey))
	if _, st := do(t, merged, req); st != api.Continue {
		t.Fatal("route did not inherit keys")
	}
	if v, _ := req.Get("x-jwt-sub"); v != "alice" {
		t.Fatal("route did not inherit forward_claims")
	}
	cl := claimsValid()
	cl["iss"] = "other"
	ctx, _ := do(t, merged, bearer(sign(t, map[string]any{"alg": "HS256"}, cl, hmacKey)))
	wantDenied(t, ctx, "issuer not allowed")
	if ctx, st := do(t, merged, fakeframework.NewRequest("GET", "/")); st != api.Continue || ctx.Consumer().Name != "guest" {
		t.Fatal("route anonymous")
	}
	// Destroying the merged config must not stop the parent's resources.
	merged.Destroy()
	// Without a parent, a route config without keys refuses tokens.
	ctx, _ = do(t, route, bearer(sign(t, map[string]any{"alg": "HS256"}, claimsValid(), hmacKey)))
	wantDenied(t, ctx, "jwks unavailable")
}

// A route that lists its own consumers without consumer_claim maps them with
// the parent's claim (README "Per-route config").
func TestRouteConsumersInheritTheClaim(t *testing.T) {
	parent, _ := newRT(t, withHS(map[string]any{
		"consumer_claim": "sub",
		"consumers":      []any{map[string]any{"name": "alice-app", "claim_value": "alice"}, map[string]any{"name": "bob"}},
	}))
	route, _, err := tryConfig(`{"consumers":[{"name":"orders-app","claim_value":"alice"}]}`, true)
	if err != nil {
		t.Fatalf("route config with consumers and no consumer_claim: %v", err)
	}
	merged := merge(parent, route).(*Config)
	merged.rt.now = func() time.Time { return fixedNow }
	token := func(sub string) *fakeframework.Request {
		cl := claimsValid()
		cl["sub"] = sub
		return bearer(sign(t, map[string]any{"alg": "HS256"}, cl, hmacKey))
	}
	ctx, st := do(t, merged, token("alice"))
	if st != api.Continue || ctx.Consumer() == nil || ctx.Consumer().Name != "orders-app" {
		t.Fatalf("route consumer by the parent's claim: %v %+v", st, ctx.Consumer())
	}
	// The route's list replaces the parent's: bob is not a consumer here.
	ctx, _ = do(t, merged, token("bob"))
	wantDenied(t, ctx, "unknown consumer")

	// No claim in the parent either (or no parent): nothing can name a listed
	// consumer, so every token is refused rather than let through unmapped.
	plain, _ := newRT(t, withHS(nil))
	alone, _, err := tryConfig(withHS(map[string]any{"consumers": []any{map[string]any{"name": "alice"}}}), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(alone.Destroy)
	for name, cfg := range map[string]*Config{"parent without claim": merge(plain, route).(*Config), "no parent": alone} {
		cfg.rt.now = func() time.Time { return fixedNow }
		ctx, _ := do(t, cfg, token("alice"))
		t.Run(name, func(t *testing.T) { wantDenied(t, ctx, "unknown consumer") })
	}
	// A token carrying an empty-named claim does not match a missing claim name.
	cl := claimsValid()
	cl[""] = "alice"
	ctx, _ = do(t, alone, bearer(sign(t, map[string]any{"alg": "HS256"}, cl, hmacKey)))
	wantDenied(t, ctx, "unknown consumer")
}

func TestConfigErrorsNameTheField(t *testing.T) {
	testKeys(t)
	for _, tc := range []struct{ name, cfg, field string }{
		{"no keys", `{}`, "keys"},
		{"short secret", `{"keys":[{"secret":"short"}]}`, "keys[0]"},
		{"two materials", `{"keys":[{"secret":"` + string(hmacKey) + `","pem":"x"}]}`, "keys[0]"},
		{"bad pem", `{"keys":[{"pem":"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"}]}`, "keys[0].pem"},
		{"bad jwk", `{"keys":[{"jwk":{"kty":"RSA"}}]}`, "keys[0].jwk"},
		{"alg does not fit key", `{"keys":[{"secret":"` + string(hmacKey) + `","alg":"RS256"}]}`, "keys[0].alg"},
		{"alg none", `{"keys":[{"secret":"` + string(hmacKey) + `"}],"algorithms":["none"]}`, "algorithms[0]"},
		{"key outside algorithms", `{"keys":[{"secret":"` + string(hmacKey) + `"}],"algorithms":["RS256"]}`, "keys[0]"},
		{"url and file", `{"jwks":{"url":"http://x","file":"/y"}}`, "jwks"},
		{"bad url", `{"jwks":{"url":"ftp://x"}}`, "jwks.url"},
		{"missing file", `{"jwks":{"file":"/nonexistent/jwks.json"}}`, "jwks.file"},
		{"bad source", `{"keys":[{"secret":"` + string(hmacKey) + `"}],"from":[{"header":"a","query":"b"}]}`, "from[0]"},
		{"bad claim header", `{"keys":[{"secret":"` + string(hmacKey) + `"}],"forward_claims":[{"claim":"sub","header":"x y"}]}`, "forward_claims[0].header"},
		{"consumers without claim", `{"keys":[{"secret":"` + string(hmacKey) + `"}],"consumers":[{"name":"a"}]}`, "consumer_claim"},
		{"consumer name twice", `{"keys":[{"secret":"` + string(hmacKey) + `"}],"consumer_claim":"sub","consumers":[{"name":"a","claim_value":"1"},{"name":"a","claim_value":"2"}]}`, "consumers[1].name"},
		{"claim value twice", `{"keys":[{"secret":"` + string(hmacKey) + `"}],"consumer_claim":"sub","consumers":[{"name":"a","claim_value":"x"},{"name":"b","claim_value":"x"}]}`, "consumers[1].claim_value"},
		{"claim value is another's name", `{"keys":[{"secret":"` + string(hmacKey) + `"}],"consumer_claim":"sub","consumers":[{"name":"a"},{"name":"b","claim_value":"a"}]}`, "consumers[1].claim_value"},
		{"consumer name with CRLF", `{"keys":[{"secret":"` + string(hmacKey) + `"}],"consumer_claim":"sub","consumers":[{"name":"a\r\nx: y"}]}`, "consumers[0].name"},
		{"unknown field", `{"keyz":[]}`, "keyz"},
		{"realm quote", `{"realm":"a\"b"}`, "realm"},
		{"small rsa", `{"keys":[{"pem":` + string(mustJSON(pubPEM(t, &smallRSA(t).PublicKey))) + `}]}`, "keys[0].pem"},
	} {
		// moectl validate checks with Init in check-only mode: it finds the same errors.
		for _, checking := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/checking=%v", tc.name, checking), func(t *testing.T) {
				cfg, _, err := initConfig(tc.cfg, false, checking)
				if err == nil {
					cfg.Destroy()
				}
				fe, ok := err.(*api.FieldError)
				if !ok {
					t.Fatalf("err = %v (%T), want a field error on %s", err, err, tc.field)
				}
				if fe.Field != tc.field {
					t.Fatalf("field %q (%v), want %q", fe.Field, err, tc.field)
				}
			})
		}
	}
}

// The plugin's own consumer list is checked by Validate, so offline
// validation (moectl runs no Init) reports it too.
func TestOwnConsumersCheckedWithoutInit(t *testing.T) {
	p, _ := registry.Get(Name)
	err := config.CheckPlugin(p, []byte(withHS(map[string]any{"consumer_claim": "sub",
		"consumers": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "claim_value": "a"}}})), false)
	if err == nil || !strings.Contains(err.Error(), `field consumers[1].claim_value: claim value "a" is also used by jwt-auth's consumers[0]`) {
		t.Fatalf("got %v", err)
	}
}
