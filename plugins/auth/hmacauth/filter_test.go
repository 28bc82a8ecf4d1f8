package hmacauth

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

const (
	aliceSecret = "alice-secret-0123456789abcdef"
	aliceNew    = "alice-rotated-secret-0123456789"
	bobSecret   = "bob-secret-0123456789abcdefgh"
)

var (
	now      = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	httpDate = now.Format(http.TimeFormat)
	stdList  = []string{"@request-target", "date", "x-nonce"}
	nonceSeq atomic.Int64
)

func nextNonce() string { return fmt.Sprintf("n-%d-%d", time.Now().UnixNano(), nonceSeq.Add(1)) }

func testConfig(extra map[string]any) map[string]any {
	m := map[string]any{
		"consumers": []map[string]any{
			{"name": "alice", "keys": []map[string]any{{"key_id": "alice-1", "secret": aliceSecret}, {"key_id": "alice-2", "secret": aliceNew}}},
			{"name": "bob", "group": "partners", "keys": []map[string]any{{"key_id": "bob", "secret": bobSecret}}},
		},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// newTestConfig parses a config with a fixed clock and a private replay cache.
func newTestConfig(t testing.TB, extra map[string]any) (*Config, *fakeframework.Env) {
	c, env := mustParse(t, testConfig(extra))
	c.compiled.now = func() time.Time { return now }
	if c.compiled.replay != nil {
		c.compiled.replay = newNonceStore(10000)
	}
	return c, env
}

// signed builds a request signed by the independent client.
func signed(keyID, secret, alg, method, path string, list []string, kv ...string) *fakeframework.Request {
	var hs [][2]string
	for i := 0; i+1 < len(kv); i += 2 {
		hs = append(hs, [2]string{kv[i], kv[i+1]})
	}
	req := fakeframework.NewRequest(method, path, kv...)
	req.Add("authorization", clientSign(keyID, secret, alg, method, path, hs, list))
	return req
}

func std(kv ...string) []string {
	return append([]string{"date", httpDate, "x-nonce", nextNonce()}, kv...)
}

func TestHMACAuthAccepts(t *testing.T) {
	c, _ := newTestConfig(t, nil)
	tests := []struct {
		name, consumer string
		req            *fakeframework.Request
	}{
		{"hmac-sha256", "alice", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/a?x=1&y=2", stdList, std()...)},
		{"hmac-sha512", "bob", signed("bob", bobSecret, "hmac-sha512", "POST", "/b", stdList, std()...)},
		{"rotated second key", "alice", signed("alice-2", aliceNew, "hmac-sha256", "GET", "/", stdList, std()...)},
		{"draft-cavage (request-target) spelling", "alice", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", []string{"(request-target)", "date", "x-nonce"}, std()...)},
		{"extra signed headers, multi-valued", "alice", signed("alice-1", aliceSecret, "hmac-sha256", "PUT", "/c",
			[]string{"x-nonce", "@request-target", "date", "x-tenant", "host"}, std("x-tenant", "a ", "x-tenant", " b", "host", "example.com")...)},
		{"unix seconds date", "alice", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/",
			stdList, "date", fmt.Sprint(now.Unix()), "x-nonce", nextNonce())},
		{"date at the edge of the window", "alice", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/",
			stdList, "date", now.Add(-300*time.Second).Format(http.TimeFormat), "x-nonce", nextNonce())},
		{"unicode header value", "alice", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/",
			append(stdList, "x-name"), std("x-name", "Zoë 🙂")...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, st := run(c, tt.req)
			if st != api.Continue || ctx.Consumer() == nil || ctx.Consumer().Name != tt.consumer {
				t.Fatalf("want %s, got %v %+v %+v", tt.consumer, st, ctx.Consumer(), ctx.Replied)
			}
			if v, _ := tt.req.Get("x-consumer-name"); v != tt.consumer {
				t.Fatalf("x-consumer-name %q", v)
			}
		})
	}
}

func TestHMACAuthRefuses(t *testing.T) {
	c, env := newTestConfig(t, nil)
	good := func() *fakeframework.Request {
		return signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/a?x=1", stdList, std()...)
	}
	with := func(f func(h *fakeframework.Request)) *fakeframework.Request { h := good(); f(h); return h }
	auth := func(v string) func(h *fakeframework.Request) {
		return func(h *fakeframework.Request) { h.Set("authorization", v) }
	}
	sig := func(list []string, kv ...string) string {
		return clientSign("alice-1", aliceSecret, "hmac-sha256", "GET", "/", nil, list)
	}
	tests := []struct {
		name   string
		req    *fakeframework.Request
		code   int
		reason string
		metric string
	}{
		{"no Authorization", fakeframework.NewRequest("GET", "/", std()...), 401, "missing signature", "missing"},
		{"another scheme", fakeframework.NewRequest("GET", "/", append(std(), "authorization", "Basic YTpi")...), 401, "missing signature", "missing"},
		{"wrong secret", signed("alice-1", "wrong-secret-0123456789abcdef", "hmac-sha256", "GET", "/", stdList, std()...), 401, "invalid signature", "bad_signature"},
		{"unknown keyId", signed("mallory", aliceSecret, "hmac-sha256", "GET", "/", stdList, std()...), 401, "invalid signature", "unknown_key"},
		{"other consumer's keyId", signed("bob", aliceSecret, "hmac-sha256", "GET", "/", stdList, std()...), 401, "invalid signature", "bad_signature"},
		{"tampered path", with(func(h *fakeframework.Request) { h.SetPath("/a?x=2") }), 401, "invalid signature", "bad_signature"},
		{"tampered method", with(func(h *fakeframework.Request) { h.SetMethod("DELETE") }), 401, "invalid signature", "bad_signature"},
		{"tampered nonce", with(func(h *fakeframework.Request) { h.Set("x-nonce", nextNonce()) }), 401, "invalid signature", "bad_signature"},
		{"signature of another algorithm", with(func(h *fakeframework.Request) {
			v, _ := h.Get("authorization")
			h.Set("authorization", strings.Replace(v, "hmac-sha256", "hmac-sha512", 1))
		}), 401, "invalid signature", "bad_signature"},
		{"garbage signature", with(func(h *fakeframework.Request) {
			v, _ := h.Get("authorization")
			i := strings.Index(v, `signature="`)
			h.Set("authorization", v[:i]+`signature="!!!"`)
		}), 401, "invalid signature", "bad_signature"},
		{"oversized signature value", with(func(h *fakeframework.Request) {
			v, _ := h.Get("authorization")
			i := strings.Index(v, `signature="`)
			h.Set("authorization", v[:i]+`signature="`+strings.Repeat("QUFB", 100)+`"`)
		}), 401, "invalid signature", "bad_signature"},
		{"algorithm none", with(auth(`Signature keyId="alice-1",algorithm="none",headers="@request-target date x-nonce",signature="AAAA"`)), 401, "unsupported signature algorithm", "bad_algorithm"},
		{"hmac-sha1 not allowed", with(auth(`Signature keyId="alice-1",algorithm="hmac-sha1",headers="@request-target date x-nonce",signature="AAAA"`)), 401, "unsupported signature algorithm", "bad_algorithm"},
		{"no quotes", with(auth(`Signature keyId=alice-1,algorithm=hmac-sha256,signature=AAAA`)), 401, "malformed signature header", "malformed"},
		{"duplicate keyId", with(auth(`Signature keyId="alice-1",keyId="bob",algorithm="hmac-sha256",signature="AAAA"`)), 401, "malformed signature header", "malformed"},
		{"backslash escape", with(auth(`Signature keyId="al\"ice",algorithm="hmac-sha256",signature="AAAA"`)), 401, "malformed signature header", "malformed"},
		{"missing signature param", with(auth(`Signature keyId="alice-1",algorithm="hmac-sha256",headers="date"`)), 401, "malformed signature header", "malformed"},
		{"CRLF in Authorization", with(auth("Signature keyId=\"alice-1\r\nx-admin: 1\",algorithm=\"hmac-sha256\",signature=\"AAAA\"")), 401, "malformed signature header", "malformed"},
		{"upper-case name in headers list", with(auth(`Signature keyId="alice-1",algorithm="hmac-sha256",headers="@request-target Date x-nonce",signature="AAAA"`)), 401, "malformed signature header", "malformed"},
		{"duplicate name in headers list", with(auth(`Signature keyId="alice-1",algorithm="hmac-sha256",headers="@request-target date date x-nonce",signature="AAAA"`)), 401, "malformed signature header", "malformed"},
		{"two Authorization headers", with(func(h *fakeframework.Request) { v, _ := h.Get("authorization"); h.Add("authorization", v) }), 401, "malformed signature header", "malformed"},
		{"oversized Authorization", with(auth("Signature " + strings.Repeat("a", 9000))), 401, "signature header too large", "too_large"},
		{"date not signed", with(auth(sig([]string{"@request-target", "x-nonce"}))), 401, "missing signed header: date", "missing_header"},
		{"request target not signed", with(auth(sig([]string{"date", "x-nonce"}))), 401, "missing signed header: @request-target", "missing_header"},
		{"nonce not signed", with(auth(sig([]string{"@request-target", "date"}))), 401, "missing signed header: x-nonce", "missing_header"},
		{"headers param absent means date only", with(auth(`Signature keyId="alice-1",algorithm="hmac-sha256",signature="AAAA"`)), 401, "missing signed header: @request-target", "missing_header"},
		{"date header absent", with(func(h *fakeframework.Request) { h.Del("date") }), 401, "missing signed header: date", "missing_header"},
		{"listed header absent", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", append(stdList, "x-absent"), std()...), 401, "missing signed header", "missing_header"},
		{"malformed date", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, "date", "yesterday", "x-nonce", nextNonce()), 401, "malformed date header", "malformed"},
		{"expired date", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, "date", now.Add(-301*time.Second).Format(http.TimeFormat), "x-nonce", nextNonce()), 401, "request expired or clock skew too large", "expired"},
		{"date in the future (not yet valid)", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, "date", now.Add(301*time.Second).Format(http.TimeFormat), "x-nonce", nextNonce()), 401, "request expired or clock skew too large", "expired"},
		{"expired unix date", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, "date", fmt.Sprint(now.Unix()-3600), "x-nonce", nextNonce()), 401, "request expired or clock skew too large", "expired"},
		{"empty nonce", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, "date", httpDate, "x-nonce", ""), 401, "malformed nonce", "malformed"},
		{"nonce split over two headers", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, "date", httpDate, "x-nonce", nextNonce(), "x-nonce", nextNonce()), 401, "malformed nonce", "malformed"},
		{"date split over two headers", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, "date", httpDate, "date", httpDate, "x-nonce", nextNonce()), 401, "malformed date header", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := env.Count("denied_" + tt.metric)
			ctx, st := run(c, tt.req)
			if st != api.Stop || ctx.Replied == nil || ctx.Replied.Code != tt.code {
				t.Fatalf("want %d, got %v %+v", tt.code, st, ctx.Replied)
			}
			if got := strings.TrimSpace(ctx.Replied.Body); got != tt.reason {
				t.Fatalf("body %q, want %q", got, tt.reason)
			}
			if ch := ctx.Replied.Header("www-authenticate"); ch != `Signature realm="moe", headers="@request-target date x-nonce"` {
				t.Fatalf("challenge %q", ch)
			}
			if env.Count("denied_"+tt.metric) != before+1 {
				t.Fatalf("denied_%s not counted", tt.metric)
			}
			for _, s := range []string{aliceSecret, "signature=", "AAAA"} {
				if strings.Contains(ctx.Replied.Body, s) {
					t.Fatalf("body echoes the credential: %q", ctx.Replied.Body)
				}
			}
			if ctx.Consumer() != nil {
				t.Fatal("consumer set on a refused request")
			}
		})
	}
}

func TestReplayProtection(t *testing.T) {
	c, env := newTestConfig(t, nil)
	nonce := nextNonce()
	req := func(key, secret string) *fakeframework.Request {
		return signed(key, secret, "hmac-sha256", "GET", "/", stdList, "date", httpDate, "x-nonce", nonce)
	}
	if _, st := run(c, req("alice-1", aliceSecret)); st != api.Continue {
		t.Fatal("first use refused")
	}
	ctx, st := run(c, req("alice-1", aliceSecret))
	if st != api.Stop || ctx.Replied.Code != 401 || !strings.Contains(ctx.Replied.Body, "replayed") {
		t.Fatalf("replay accepted: %v %+v", st, ctx.Replied)
	}
	if env.Count("denied_replay") != 1 {
		t.Fatal("replay not counted")
	}
	// The same nonce under another key is another request.
	if _, st := run(c, req("bob", bobSecret)); st != api.Continue {
		t.Fatal("same nonce, other key refused")
	}
	// Once the date has left the window the nonce is forgotten, and the date
	// check refuses the old request anyway.
	c.compiled.now = func() time.Time { return now.Add(301 * time.Second) }
	ctx, _ = run(c, req("alice-1", aliceSecret))
	if !strings.Contains(ctx.Replied.Body, "expired") {
		t.Fatalf("old replay: %+v", ctx.Replied)
	}
}

func TestReplayCacheFullFailsClosed(t *testing.T) {
	c, env := newTestConfig(t, nil)
	c.compiled.replay = newNonceStore(nonceShards) // one entry per shard
	full := false
	for i := 0; i < 4*nonceShards && !full; i++ {
		ctx, st := run(c, signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, std()...))
		if st == api.Stop {
			if ctx.Replied.Code != 503 {
				t.Fatalf("got %+v", ctx.Replied)
			}
			full = true
		}
	}
	if !full || env.Count("denied_replay_cache_full") == 0 {
		t.Fatal("cache never reported full")
	}
	// Time passes: expired nonces make room again.
	c.compiled.now = func() time.Time { return now.Add(10 * time.Minute) }
	later := now.Add(10 * time.Minute).Format(http.TimeFormat)
	if _, st := run(c, signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, "date", later, "x-nonce", nextNonce())); st != api.Continue {
		t.Fatal("expired nonces were not dropped")
	}
}

func TestNonceStoreBounded(t *testing.T) {
	s := newNonceStore(6400)
	exp := now.Add(time.Minute)
	for i := 0; i < 20000; i++ {
		s.add("k", fmt.Sprint(i), now, exp)
	}
	if n := s.len(); n > 6400 {
		t.Fatalf("store holds %d > 6400", n)
	}
	if r, _ := s.add("k", "1", now, exp); !r {
		t.Fatal("a stored nonce is not reported as a replay")
	}
}

func TestBodyDigest(t *testing.T) {
	c, env := newTestConfig(t, map[string]any{"validate_request_body": true})
	if n := c.Needs(); n.RequestBody != api.WholeBody || n.MaxRequestBody != 1<<20 {
		t.Fatalf("needs %+v", n)
	}
	body := `{"amount":100}`
	s256 := sha256.Sum256([]byte(body))
	s512 := sha512.Sum512([]byte(body))
	b64 := base64.StdEncoding.EncodeToString
	withDigest := append(stdList, "digest")
	withCD := append(stdList, "content-digest")
	tests := []struct {
		name string
		req  *fakeframework.Request
		body string
		ok   bool
	}{
		{"Digest SHA-256", signed("alice-1", aliceSecret, "hmac-sha256", "POST", "/", withDigest, std("digest", "SHA-256="+b64(s256[:]))...), body, true},
		{"Content-Digest sha-512", signed("alice-1", aliceSecret, "hmac-sha256", "POST", "/", withCD, std("content-digest", "sha-512=:"+b64(s512[:])+":")...), body, true},
		{"no body, no digest", signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, std()...), "", true},
		{"body without digest", signed("alice-1", aliceSecret, "hmac-sha256", "POST", "/", stdList, std()...), body, false},
		{"digest of another body", signed("alice-1", aliceSecret, "hmac-sha256", "POST", "/", withDigest, std("digest", "SHA-256="+b64(s256[:]))...), body + " ", false},
		{"unsigned digest header", signed("alice-1", aliceSecret, "hmac-sha256", "POST", "/", stdList, std("digest", "SHA-256="+b64(s256[:]))...), body, false},
		{"only an unknown digest algorithm", signed("alice-1", aliceSecret, "hmac-sha256", "POST", "/", withDigest, std("digest", "MD5=abc")...), body, false},
		{"malformed content-digest", signed("alice-1", aliceSecret, "hmac-sha256", "POST", "/", withCD, std("content-digest", "sha-256="+b64(s256[:]))...), body, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, st := runBody(c, tt.req, tt.body)
			if tt.ok != (st == api.Continue) {
				t.Fatalf("ok=%v, got %v %+v", tt.ok, st, ctx.Replied)
			}
			if !tt.ok && !strings.Contains(ctx.Replied.Body, "digest") {
				t.Fatalf("reason %q", ctx.Replied.Body)
			}
		})
	}
	if env.Count("denied_bad_digest") != 5 {
		t.Fatalf("denied_bad_digest = %d", env.Count("denied_bad_digest"))
	}
}

func TestHideCredentialsAndAnonymous(t *testing.T) {
	c, _ := newTestConfig(t, map[string]any{"hide_credentials": true, "anonymous_consumer": "guest"})
	req := signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, std()...)
	if _, st := run(c, req); st != api.Continue {
		t.Fatal("refused")
	}
	if _, ok := req.Get("authorization"); ok {
		t.Fatal("authorization not hidden")
	}
	ctx, st := run(c, fakeframework.NewRequest("GET", "/"))
	if st != api.Continue || !consumer.IsAnonymous(ctx.Consumer()) {
		t.Fatalf("anonymous: %v %+v", st, ctx.Replied)
	}
	if _, st := run(c, signed("alice-1", "wrong-secret-0123456789", "hmac-sha256", "GET", "/", stdList, std()...)); st != api.Stop {
		t.Fatal("a bad signature must stay refused with anonymous access on")
	}
}

func TestConfigValidation(t *testing.T) {
	k := `"consumers":[{"name":"a","keys":[{"key_id":"k","secret":"0123456789abcdef"}]}]`
	tests := []struct{ name, js, field string }{
		{"short secret", `{"consumers":[{"name":"a","keys":[{"key_id":"k","secret":"s3cr3t-short"}]}]}`, "consumers[0].keys[0].secret"},
		{"duplicate key id", `{"consumers":[{"name":"a","keys":[{"key_id":"k","secret":"0123456789abcdef"}]},{"name":"b","keys":[{"key_id":"k","secret":"0123456789abcdeg"}]}]}`, "consumers[1].keys[0].key_id"},
		{"key id with quote", `{"consumers":[{"name":"a","keys":[{"key_id":"k\"","secret":"0123456789abcdef"}]}]}`, "consumers[0].keys[0].key_id"},
		{"unknown algorithm", `{"allowed_algorithms":["hmac-sha1"],` + k + `}`, "allowed_algorithms[0]"},
		{"no algorithm", `{"allowed_algorithms":[],` + k + `}`, "allowed_algorithms"},
		{"clock skew zero", `{"clock_skew":"0s",` + k + `}`, "clock_skew"},
		{"bad signed header", `{"signed_headers":["a b"],` + k + `}`, "signed_headers[0]"},
		{"bad date header", `{"date_header":"",` + k + `}`, "date_header"},
		{"tiny nonce cache", `{"nonce_cache_size":10,` + k + `}`, "nonce_cache_size"},
		{"no consumers", `{}`, "consumers"},
		{"consumer without keys", `{"consumers":[{"name":"a"}]}`, "consumers[0].keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parse(t, tt.js, false)
			fe, ok := err.(*api.FieldError)
			if !ok || fe.Field != tt.field {
				t.Fatalf("got %v (%T), want field %q", err, err, tt.field)
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "0123456789abcdef") {
				t.Fatalf("error echoes a secret: %v", err)
			}
		})
	}
}

func TestPerRouteConfigKeepsParentKeys(t *testing.T) {
	parent, _ := newTestConfig(t, nil)
	route, _, err := parse(t, `{"anonymous_consumer":"guest","allowed_algorithms":["hmac-sha512"]}`, true)
	if err != nil {
		t.Fatal(err)
	}
	m := merge(parent, route).(*Config)
	m.compiled.now = parent.compiled.now
	if ctx, st := run(m, fakeframework.NewRequest("GET", "/")); st != api.Continue || ctx.Consumer().Name != "guest" {
		t.Fatalf("route anonymous: %v", st)
	}
	if _, st := run(m, signed("bob", bobSecret, "hmac-sha512", "GET", "/", stdList, std()...)); st != api.Continue {
		t.Fatal("parent key refused on the route")
	}
	if _, st := run(m, signed("bob", bobSecret, "hmac-sha256", "GET", "/", stdList, std()...)); st != api.Stop {
		t.Fatal("route's allowed_algorithms not applied")
	}
}

func TestConcurrentVerification(t *testing.T) {
	c, _ := newTestConfig(t, nil)
	done := make(chan bool)
	for g := 0; g < 8; g++ {
		go func() {
			ok := true
			for i := 0; i < 200; i++ {
				if _, st := run(c, signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, std()...)); st != api.Continue {
					ok = false
				}
			}
			done <- ok
		}()
	}
	for g := 0; g < 8; g++ {
		if !<-done {
			t.Fatal("a concurrent verification failed")
		}
	}
}

func TestHeaderListIsBounded(t *testing.T) {
	var many []string
	for i := 0; i < 33; i++ {
		many = append(many, fmt.Sprintf("x-h%d", i))
	}
	if _, ok := checkHeaderList(strings.Join(many, " ")); ok {
		t.Fatal("33 signed headers accepted")
	}
	if n, ok := checkHeaderList(strings.Join(many[:32], " ")); !ok || n != 32 {
		t.Fatalf("32 signed headers: %d %v", n, ok)
	}
	// A huge list is refused quickly (no quadratic scan of thousands of names).
	huge := strings.Repeat("a ", 4000) + "a"
	start := time.Now()
	if _, ok := checkHeaderList(huge); ok {
		t.Fatal("huge list accepted")
	}
	if d := time.Since(start); d > 10*time.Millisecond {
		t.Fatalf("checkHeaderList took %v", d)
	}
}

func TestRouteOnlyConfigWithoutConsumersRefuses(t *testing.T) {
	c, _, err := parse(t, `{"nonce_header":""}`, true)
	if err != nil {
		t.Fatal(err)
	}
	c.compiled.now = func() time.Time { return now }
	if ctx, st := run(c, signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", []string{"@request-target", "date"}, "date", httpDate)); st != api.Stop || ctx.Replied.Code != 401 {
		t.Fatalf("got %v %+v", st, ctx.Replied)
	}
}
