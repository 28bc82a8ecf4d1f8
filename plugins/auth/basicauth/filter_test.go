package basicauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func basic(userpass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(userpass))
}

func bcryptOf(t testing.TB, pw string) string {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// argon2idOf builds a PHC string with small (test) parameters.
func argon2idOf(pw string) string {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	key := argon2.IDKey([]byte(pw), salt, 1, 64, 1, 32)
	return fmt.Sprintf("$argon2id$v=19$m=64,t=1,p=1$%s$%s",
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

func testConfig(t testing.TB, extra map[string]any) map[string]any {
	m := map[string]any{
		"consumers": []map[string]any{
			{"name": "alice", "password": "alice-pw"},
			{"name": "bob", "username": "bob@example.com", "password_hash": bcryptOf(t, "bob-pw")},
			{"name": "carol", "password_hash": argon2idOf("carol-pw")},
			{"name": "dörte", "password": "pässwörd:with:colons"},
		},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestBasicAuthRequests(t *testing.T) {
	c, _ := mustParse(t, testConfig(t, nil))
	b64 := base64.StdEncoding.EncodeToString
	tests := []struct {
		name     string
		auth     []string
		code     int
		consumer string
		reason   string
	}{
		{"plain password", []string{basic("alice:alice-pw")}, 0, "alice", ""},
		{"bcrypt password", []string{basic("bob@example.com:bob-pw")}, 0, "bob", ""},
		{"argon2id password", []string{basic("carol:carol-pw")}, 0, "carol", ""},
		{"unicode user, password with colons", []string{basic("dörte:pässwörd:with:colons")}, 0, "dörte", ""},
		{"scheme is case-insensitive", []string{"bAsIc " + b64([]byte("alice:alice-pw"))}, 0, "alice", ""},
		{"extra spaces after the scheme", []string{"Basic    " + b64([]byte("alice:alice-pw"))}, 0, "alice", ""},
		{"no header", nil, 401, "", "missing credentials"},
		{"another scheme counts as missing", []string{"Bearer abc.def.ghi"}, 401, "", "missing credentials"},
		{"wrong plain password", []string{basic("alice:alice-pW")}, 401, "", "invalid credentials"},
		{"wrong bcrypt password", []string{basic("bob@example.com:bob-pw ")}, 401, "", "invalid credentials"},
		{"wrong argon2id password", []string{basic("carol:carol")}, 401, "", "invalid credentials"},
		{"consumer name is not the user name", []string{basic("bob:bob-pw")}, 401, "", "invalid credentials"},
		{"unknown user", []string{basic("mallory:alice-pw")}, 401, "", "invalid credentials"},
		{"empty password", []string{basic("alice:")}, 401, "", "invalid credentials"},
		{"NFD user name and password match their NFC form in config", []string{basic("do\u0308rte:pa\u0308sswo\u0308rd:with:colons")}, 0, "dörte", ""},
		{"a different accent is another user", []string{basic("dòrte:pässwörd:with:colons")}, 401, "", "invalid credentials"},
		{"malformed base64", []string{"Basic !!!notbase64"}, 401, "", "malformed credentials"},
		{"unpadded base64", []string{"Basic " + base64.RawStdEncoding.EncodeToString([]byte("alice:alice-pw"))}, 401, "", "malformed credentials"},
		{"missing colon", []string{basic("alicealice-pw")}, 401, "", "malformed credentials"},
		{"empty token", []string{"Basic "}, 401, "", "malformed credentials"},
		{"CRLF in the user name", []string{basic("alice\r\nx-admin: 1:alice-pw")}, 401, "", "malformed credentials"},
		{"NUL in the password", []string{basic("alice:alice-pw\x00")}, 401, "", "malformed credentials"},
		{"invalid UTF-8", []string{basic("alice:\xff\xfe")}, 401, "", "malformed credentials"},
		{"two Authorization headers", []string{basic("alice:alice-pw"), basic("alice:alice-pw")}, 401, "", "malformed credentials"},
		{"oversized header", []string{"Basic " + strings.Repeat("QUFB", 1100)}, 401, "", "credentials too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := fakeframework.NewRequest("GET", "/")
			for _, a := range tt.auth {
				req.Add("authorization", a)
			}
			ctx, st := run(c, req)
			if tt.code == 0 {
				if st != api.Continue || ctx.Consumer() == nil || ctx.Consumer().Name != tt.consumer {
					t.Fatalf("want %s, got %v %+v %+v", tt.consumer, st, ctx.Consumer(), ctx.Replied)
				}
				if v, _ := req.Get("x-consumer-name"); v != tt.consumer {
					t.Fatalf("x-consumer-name %q", v)
				}
				if _, ok := req.Get("authorization"); !ok {
					t.Fatal("authorization removed without hide_credentials")
				}
				return
			}
			if st != api.Stop || ctx.Replied == nil || ctx.Replied.Code != tt.code {
				t.Fatalf("want %d, got %v %+v", tt.code, st, ctx.Replied)
			}
			if got := strings.TrimSpace(ctx.Replied.Body); got != tt.reason {
				t.Fatalf("body %q want %q", got, tt.reason)
			}
			if ch := ctx.Replied.Header("www-authenticate"); ch != `Basic realm="moe", charset="UTF-8"` {
				t.Fatalf("challenge %q", ch)
			}
			for _, secret := range []string{"alice-pw", "bob-pw", "carol", "QUFB"} {
				if strings.Contains(ctx.Replied.Body, secret) {
					t.Fatalf("reply echoes credential: %q", ctx.Replied.Body)
				}
			}
		})
	}
}

func TestHideCredentialsAndRealm(t *testing.T) {
	c, _ := mustParse(t, testConfig(t, map[string]any{"hide_credentials": true, "realm": "staff area", "consumer_header": "x-user"}))
	req := fakeframework.NewRequest("GET", "/", "authorization", basic("alice:alice-pw"), "x-user", "root")
	ctx, st := run(c, req)
	if st != api.Continue {
		t.Fatalf("got %v %+v", st, ctx.Replied)
	}
	if _, ok := req.Get("authorization"); ok {
		t.Fatal("authorization not removed")
	}
	if vs := req.Values("x-user"); len(vs) != 1 || vs[0] != "alice" {
		t.Fatalf("x-user %v", vs)
	}
	ctx, _ = run(c, fakeframework.NewRequest("GET", "/"))
	if ch := ctx.Replied.Header("www-authenticate"); ch != `Basic realm="staff area", charset="UTF-8"` {
		t.Fatalf("challenge %q", ch)
	}
}

func TestAnonymous(t *testing.T) {
	c, env := mustParse(t, testConfig(t, map[string]any{"anonymous_consumer": "guest"}))
	ctx, st := run(c, fakeframework.NewRequest("GET", "/"))
	if st != api.Continue || !consumer.IsAnonymous(ctx.Consumer()) {
		t.Fatalf("no credentials: %v %+v", st, ctx.Replied)
	}
	ctx, st = run(c, fakeframework.NewRequest("GET", "/", "authorization", "Bearer x"))
	if st != api.Continue || !consumer.IsAnonymous(ctx.Consumer()) {
		t.Fatalf("other scheme: %v %+v", st, ctx.Replied)
	}
	if _, st = run(c, fakeframework.NewRequest("GET", "/", "authorization", basic("alice:nope"))); st != api.Stop {
		t.Fatal("wrong password must stay refused with anonymous access on")
	}
	if env.Count("anonymous") != 2 || env.Count("denied_invalid") != 1 {
		t.Fatalf("metrics: anonymous=%d denied_invalid=%d", env.Count("anonymous"), env.Count("denied_invalid"))
	}
}

// countingHash counts verifications so the cache can be observed.
type countingHash struct {
	pw string
	n  atomic.Int32
}

func (h *countingHash) verify(p []byte) bool { h.n.Add(1); return string(p) == h.pw }

func TestVerifiedCache(t *testing.T) {
	h := &countingHash{pw: "secret"}
	u := &users{
		byName: map[string]*user{"u": {consumer: &api.Consumer{Name: "u"}, hash: h}},
		hashed: true,
		cache:  newVerifiedCache(2, [32]byte{1}),
		sem:    make(chan struct{}, 1),
	}
	ctx := context.Background()
	verify := func(pw string) bool {
		c, _ := u.verify(ctx, []byte("u"), []byte(pw))
		return c != nil
	}
	if !verify("secret") || h.n.Load() != 1 {
		t.Fatalf("first verification: calls=%d", h.n.Load())
	}
	if !verify("secret") || h.n.Load() != 1 {
		t.Fatalf("hot credential re-hashed: calls=%d", h.n.Load())
	}
	if verify("wrong") || h.n.Load() != 2 {
		t.Fatalf("a wrong password must be hashed and refused: calls=%d", h.n.Load())
	}
	if verify("wrong") || h.n.Load() != 3 {
		t.Fatalf("failures must not be cached: calls=%d", h.n.Load())
	}
	// Same password, other user: the key covers the user name.
	u.byName["v"] = &user{consumer: &api.Consumer{Name: "v"}, hash: &countingHash{pw: "other"}}
	if c, _ := u.verify(ctx, []byte("v"), []byte("secret")); c != nil {
		t.Fatal("cache entry of u accepted for v")
	}
	// Bounded: more distinct credentials than the size never grow the map.
	for i := 0; i < 10; i++ {
		u.cache.put(u.cache.key([]byte("u"), []byte(fmt.Sprint(i))), u.byName["u"])
	}
	if len(u.cache.m) != 2 {
		t.Fatalf("cache holds %d entries, size is 2", len(u.cache.m))
	}
}

func TestCanceledWhileWaitingForHashSlotIsRefused(t *testing.T) {
	h := &countingHash{pw: "secret"}
	u := &users{
		byName: map[string]*user{"u": {consumer: &api.Consumer{Name: "u"}, hash: h}},
		hashed: true, sem: make(chan struct{}, 1),
	}
	u.sem <- struct{}{} // all slots busy
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c, alive := u.verify(ctx, []byte("u"), []byte("secret")); c != nil || alive {
		t.Fatalf("got %v alive=%v", c, alive)
	}
}

func TestNeedsMayBlockOnlyWithHashes(t *testing.T) {
	plain, _ := mustParse(t, map[string]any{"consumers": []map[string]any{{"name": "a", "password": "x"}}})
	if plain.Needs().MayBlock != 0 {
		t.Fatal("plain passwords must run inline")
	}
	hashed, _ := mustParse(t, testConfig(t, nil))
	if hashed.Needs().MayBlock&api.BlockReceive == 0 {
		t.Fatal("hashed passwords must be verified off the worker thread")
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct{ name, js, field string }{
		{"password and hash", `{"consumers":[{"name":"a","password":"p4ssw0rd-x","password_hash":"$2a$04$x"}]}`, "consumers[0]"},
		{"no password", `{"consumers":[{"name":"a"}]}`, "consumers[0]"},
		{"unknown hash", `{"consumers":[{"name":"a","password_hash":"{SHA}p4ssw0rd-x"}]}`, "consumers[0].password_hash"},
		{"malformed bcrypt", `{"consumers":[{"name":"a","password_hash":"$2a$04$p4ssw0rd-x"}]}`, "consumers[0].password_hash"},
		{"argon2i", `{"consumers":[{"name":"a","password_hash":"$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"}]}`, "consumers[0].password_hash"},
		{"argon2id memory too large", `{"consumers":[{"name":"a","password_hash":"$argon2id$v=19$m=9999999,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"}]}`, "consumers[0].password_hash"},
		{"colon in user name", `{"consumers":[{"name":"a","username":"a:b","password":"p4ssw0rd-x"}]}`, "consumers[0].username"},
		{"CRLF in password", `{"consumers":[{"name":"a","password":"p4ssw0rd-x\r\n"}]}`, "consumers[0].password"},
		{"duplicate user", `{"consumers":[{"name":"a","password":"p4ssw0rd-x"},{"name":"b","username":"a","password":"p4ssw0rd-x"}]}`, "consumers[1].username"},
		{"no consumers", `{}`, "consumers"},
		{"cache size", `{"cache_size":-1,"consumers":[{"name":"a","password":"p4ssw0rd-x"}]}`, "cache_size"},
		{"realm quote", `{"realm":"\"","consumers":[{"name":"a","password":"p4ssw0rd-x"}]}`, "realm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parse(t, tt.js, false)
			fe, ok := err.(*api.FieldError)
			if !ok || fe.Field != tt.field {
				t.Fatalf("got %v (%T), want field %q", err, err, tt.field)
			}
			if strings.Contains(err.Error(), "p4ssw0rd-x") {
				t.Fatalf("error echoes a password: %v", err)
			}
		})
	}
}

func TestPerRouteAnonymousKeepsParentUsers(t *testing.T) {
	parent, _ := mustParse(t, testConfig(t, nil))
	route, _, err := parse(t, `{"anonymous_consumer":"guest"}`, true)
	if err != nil {
		t.Fatal(err)
	}
	m := merge(parent, route).(*Config)
	if ctx, st := run(m, fakeframework.NewRequest("GET", "/")); st != api.Continue || ctx.Consumer().Name != "guest" {
		t.Fatalf("route anonymous: %v", st)
	}
	if ctx, st := run(m, fakeframework.NewRequest("GET", "/", "authorization", basic("alice:alice-pw"))); st != api.Continue || ctx.Consumer().Name != "alice" {
		t.Fatalf("parent users on route: %v", st)
	}
	if m.Needs().MayBlock == 0 {
		t.Fatal("merged config lost the hashed users' needs")
	}
}

func TestRouteOnlyConfigWithoutConsumersRefuses(t *testing.T) {
	c, _, err := parse(t, `{"anonymous_consumer":"guest"}`, true)
	if err != nil {
		t.Fatal(err)
	}
	if ctx, st := run(c, fakeframework.NewRequest("GET", "/", "authorization", basic("alice:alice-pw"))); st != api.Stop || ctx.Replied.Code != 401 {
		t.Fatalf("got %v", st)
	}
	if ctx, st := run(c, fakeframework.NewRequest("GET", "/")); st != api.Continue || ctx.Consumer().Name != "guest" {
		t.Fatalf("got %v", st)
	}
}
