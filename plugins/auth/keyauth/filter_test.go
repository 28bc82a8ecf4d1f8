package keyauth

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

const (
	aliceKey = "alice-key-0123456789"
	aliceNew = "alice-key-rotated-99"
	bobKey   = "bob-key-abcdefghijkl"
	uniKey   = "ключ-боба-🔑-0001"
)

func baseConfig(extra map[string]any) map[string]any {
	m := map[string]any{
		"sources": []string{"header:x-api-key", "query:api_key", "cookie:apikey"},
		"consumers": []map[string]any{
			{"name": "alice", "group": "admins", "keys": []string{aliceKey, aliceNew}},
			{"name": "bob", "keys": []string{bobKey, uniKey}},
		},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestKeyAuthRequests(t *testing.T) {
	c, _ := mustParse(t, baseConfig(nil))
	tests := []struct {
		name     string
		req      *fakeframework.Request
		code     int    // 0: passes
		consumer string // when it passes
		reason   string // body when refused
	}{
		{"header key identifies consumer", fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey), 0, "alice", ""},
		{"second (rotated) key of the same consumer works", fakeframework.NewRequest("GET", "/", "x-api-key", aliceNew), 0, "alice", ""},
		{"query key", fakeframework.NewRequest("GET", "/p?a=1&api_key="+bobKey), 0, "bob", ""},
		{"percent-encoded query key", fakeframework.NewRequest("GET", "/p?api_key=bob%2Dkey%2Dabcdefghijkl"), 0, "bob", ""},
		{"cookie key", fakeframework.NewRequest("GET", "/", "cookie", "a=b; apikey="+aliceKey), 0, "alice", ""},
		{"unicode key", fakeframework.NewRequest("GET", "/", "x-api-key", uniKey), 0, "bob", ""},
		{"header wins over query (lookup order)", fakeframework.NewRequest("GET", "/?api_key=nope-nope-nope", "x-api-key", bobKey), 0, "bob", ""},
		{"empty header falls through to query", fakeframework.NewRequest("GET", "/?api_key="+bobKey, "x-api-key", ""), 0, "bob", ""},
		{"no key", fakeframework.NewRequest("GET", "/"), 401, "", "missing API key"},
		{"wrong key", fakeframework.NewRequest("GET", "/", "x-api-key", "alice-key-0123456788"), 401, "", "invalid API key"},
		{"key prefix only", fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey[:10]), 401, "", "invalid API key"},
		{"key with extra suffix", fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey+"x"), 401, "", "invalid API key"},
		{"unicode homoglyph of a key", fakeframework.NewRequest("GET", "/", "x-api-key", strings.Replace(uniKey, "к", "k", 1)), 401, "", "invalid API key"},
		{"CRLF injected in key", fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey+"\r\nx-admin: 1"), 401, "", "malformed API key"},
		{"NUL in key", fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey+"\x00"), 401, "", "malformed API key"},
		{"CRLF in query key", fakeframework.NewRequest("GET", "/?api_key="+aliceKey+"%0d%0a"), 401, "", "malformed API key"},
		{"oversized key", fakeframework.NewRequest("GET", "/", "x-api-key", strings.Repeat("k", 1025)), 401, "", "malformed API key"},
		{"two different keys in one header", fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey, "x-api-key", bobKey), 401, "", "malformed API key"},
		{"the same key twice is fine", fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey, "x-api-key", aliceKey), 0, "alice", ""},
		{"key in an unconfigured header", fakeframework.NewRequest("GET", "/", "apikey", aliceKey), 401, "", "missing API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, st := run(c, tt.req)
			if tt.code == 0 {
				if st != api.Continue || ctx.Replied != nil {
					t.Fatalf("want pass, got %v %+v", st, ctx.Replied)
				}
				if ctx.Consumer() == nil || ctx.Consumer().Name != tt.consumer {
					t.Fatalf("consumer = %+v, want %s", ctx.Consumer(), tt.consumer)
				}
				if v, _ := tt.req.Get("x-consumer-name"); v != tt.consumer {
					t.Fatalf("x-consumer-name = %q", v)
				}
				return
			}
			if st != api.Stop || ctx.Replied == nil || ctx.Replied.Code != tt.code {
				t.Fatalf("want %d, got %v %+v", tt.code, st, ctx.Replied)
			}
			if got := strings.TrimSpace(ctx.Replied.Body); got != tt.reason {
				t.Fatalf("body %q, want %q", got, tt.reason)
			}
			if ch := ctx.Replied.Header("www-authenticate"); ch != `Key realm="moe"` {
				t.Fatalf("www-authenticate %q", ch)
			}
			for _, k := range []string{aliceKey, bobKey, aliceKey[:10]} {
				if strings.Contains(ctx.Replied.Body, k) {
					t.Fatalf("reply echoes the credential: %q", ctx.Replied.Body)
				}
			}
			if ctx.Consumer() != nil {
				t.Fatalf("consumer set on a refused request")
			}
		})
	}
}

func TestSpoofedConsumerHeaderIsOverwritten(t *testing.T) {
	c, _ := mustParse(t, baseConfig(nil))
	req := fakeframework.NewRequest("GET", "/", "x-api-key", bobKey, "x-consumer-name", "alice")
	run(c, req)
	if vs := req.Values("x-consumer-name"); len(vs) != 1 || vs[0] != "bob" {
		t.Fatalf("x-consumer-name = %v", vs)
	}
}

func TestHideCredentialsStripsEverySource(t *testing.T) {
	c, _ := mustParse(t, baseConfig(map[string]any{"hide_credentials": true}))
	req := fakeframework.NewRequest("GET", "/p?a=1&api_key="+bobKey+"&b=2", "x-api-key", aliceKey,
		"cookie", "s=1; apikey="+aliceKey+"; t=2", "cookie", "apikey="+aliceKey)
	ctx, st := run(c, req)
	if st != api.Continue || ctx.Consumer().Name != "alice" {
		t.Fatalf("want alice, got %v %+v", st, ctx.Replied)
	}
	if _, ok := req.Get("x-api-key"); ok {
		t.Fatal("header not removed")
	}
	if p := req.Path(); p != "/p?a=1&b=2" {
		t.Fatalf("path %q", p)
	}
	if vs := req.Values("cookie"); len(vs) != 1 || vs[0] != "s=1; t=2" {
		t.Fatalf("cookies %q", vs)
	}
}

func TestCredentialsKeptByDefault(t *testing.T) {
	c, _ := mustParse(t, baseConfig(nil))
	req := fakeframework.NewRequest("GET", "/?api_key="+bobKey)
	run(c, req)
	if !strings.Contains(req.Path(), "api_key=") {
		t.Fatal("query key removed without hide_credentials")
	}
}

func TestAnonymousConsumer(t *testing.T) {
	c, env := mustParse(t, baseConfig(map[string]any{"anonymous_consumer": "guest"}))
	t.Run("no key lets the request in as the anonymous consumer", func(t *testing.T) {
		ctx, st := run(c, fakeframework.NewRequest("GET", "/"))
		if st != api.Continue || ctx.Consumer().Name != "guest" || !consumer.IsAnonymous(ctx.Consumer()) {
			t.Fatalf("got %v %+v", st, ctx.Consumer())
		}
	})
	t.Run("a wrong key is still refused", func(t *testing.T) {
		ctx, st := run(c, fakeframework.NewRequest("GET", "/", "x-api-key", "wrong-wrong-wrong"))
		if st != api.Stop || ctx.Replied.Code != 401 {
			t.Fatalf("got %v %+v", st, ctx.Replied)
		}
	})
	t.Run("a consumer authenticated by an earlier plugin is kept", func(t *testing.T) {
		req := fakeframework.NewRequest("GET", "/")
		ctx := fakeframework.NewContext("key-auth", req)
		ctx.SetConsumer(&api.Consumer{Name: "carol"})
		if st := (*filter)(c).OnReceive(ctx, req, nil, nil); st != api.Continue || ctx.Consumer().Name != "carol" {
			t.Fatalf("got %v %+v", st, ctx.Consumer())
		}
	})
	t.Run("an anonymous consumer from an earlier plugin is upgraded", func(t *testing.T) {
		req := fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey)
		ctx := fakeframework.NewContext("key-auth", req)
		ctx.SetConsumer(consumer.NewAnonymous("guest"))
		if st := (*filter)(c).OnReceive(ctx, req, nil, nil); st != api.Continue || ctx.Consumer().Name != "alice" {
			t.Fatalf("got %v %+v", st, ctx.Consumer())
		}
	})
	if env.Count("anonymous") != 1 || env.Count("skipped") != 1 || env.Count("denied_invalid") != 1 || env.Count("allowed") != 1 {
		t.Fatalf("metrics anonymous=%d skipped=%d denied_invalid=%d allowed=%d",
			env.Count("anonymous"), env.Count("skipped"), env.Count("denied_invalid"), env.Count("allowed"))
	}
}

func TestWithoutAnonymousEveryPluginMustPass(t *testing.T) {
	c, _ := mustParse(t, baseConfig(nil))
	req := fakeframework.NewRequest("GET", "/")
	ctx := fakeframework.NewContext("key-auth", req)
	ctx.SetConsumer(&api.Consumer{Name: "carol"})
	if st := (*filter)(c).OnReceive(ctx, req, nil, nil); st != api.Stop {
		t.Fatalf("got %v", st)
	}
}

func TestKeyRotationByConfigUpdate(t *testing.T) {
	v1, _ := mustParse(t, baseConfig(nil))
	v2cfg := baseConfig(nil)
	v2cfg["consumers"] = []map[string]any{{"name": "alice", "keys": []string{aliceNew}}}
	v2, _ := mustParse(t, v2cfg)
	if _, st := run(v1, fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey)); st != api.Continue {
		t.Fatal("v1 should accept the old key")
	}
	if _, st := run(v2, fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey)); st != api.Stop {
		t.Fatal("v2 must refuse the removed key")
	}
	if _, st := run(v2, fakeframework.NewRequest("GET", "/", "x-api-key", aliceNew)); st != api.Continue {
		t.Fatal("v2 should accept the new key")
	}
}

func TestMetricsByReason(t *testing.T) {
	c, env := mustParse(t, baseConfig(nil))
	run(c, fakeframework.NewRequest("GET", "/"))
	run(c, fakeframework.NewRequest("GET", "/", "x-api-key", "nope-nope-nope"))
	run(c, fakeframework.NewRequest("GET", "/", "x-api-key", "a\nb-c-d-e-f-g"))
	run(c, fakeframework.NewRequest("GET", "/", "x-api-key", aliceKey))
	for name, want := range map[string]uint64{"denied_missing": 1, "denied_invalid": 1, "denied_malformed": 1, "allowed": 1} {
		if got := env.Count(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name, js, field string
	}{
		{"unknown source type", `{"sources":["body:k"],"consumers":[{"name":"a","keys":["12345678"]}]}`, "sources[0]"},
		{"source without name", `{"sources":["header:"],"consumers":[{"name":"a","keys":["12345678"]}]}`, "sources[0]"},
		{"no sources", `{"sources":[],"consumers":[{"name":"a","keys":["12345678"]}]}`, "sources"},
		{"short key", `{"consumers":[{"name":"a","keys":["short"]}]}`, "consumers[0].keys[0]"},
		{"key with CRLF", `{"consumers":[{"name":"a","keys":["12345678\r\n"]}]}`, "consumers[0].keys[0]"},
		{"duplicate key across consumers", `{"consumers":[{"name":"a","keys":["12345678"]},{"name":"b","keys":["12345678"]}]}`, "consumers[1].keys[0]"},
		{"duplicate consumer", `{"consumers":[{"name":"a","keys":["12345678"]},{"name":"a","keys":["87654321"]}]}`, "consumers[1].name"},
		{"consumer without keys", `{"consumers":[{"name":"a"}]}`, "consumers[0].keys"},
		{"consumer without name", `{"consumers":[{"keys":["12345678"]}]}`, "consumers[0].name"},
		{"no consumers at filter level", `{}`, "consumers"},
		{"bad consumer header", `{"consumer_header":"x bad","consumers":[{"name":"a","keys":["12345678"]}]}`, "consumer_header"},
		{"realm with a quote", `{"realm":"a\"b","consumers":[{"name":"a","keys":["12345678"]}]}`, "realm"},
		{"unknown field", `{"keys":[],"consumers":[{"name":"a","keys":["12345678"]}]}`, "keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parse(t, tt.js, false)
			fe, ok := err.(*api.FieldError)
			if !ok {
				t.Fatalf("want *api.FieldError, got %T %v", err, err)
			}
			if fe.Field != tt.field {
				t.Fatalf("field %q (%v), want %q", fe.Field, err, tt.field)
			}
			if strings.Contains(err.Error(), "12345678") {
				t.Fatalf("error echoes a key: %v", err)
			}
		})
	}
}

func TestPerRouteConfigKeepsParentKeys(t *testing.T) {
	parent, _ := mustParse(t, baseConfig(nil))
	route, _, err := parse(t, `{"sources":["header:x-api-key"],"anonymous_consumer":"guest"}`, true)
	if err != nil {
		t.Fatal(err)
	}
	m := merge(parent, route).(*Config)
	if ctx, st := run(m, fakeframework.NewRequest("GET", "/")); st != api.Continue || ctx.Consumer().Name != "guest" {
		t.Fatalf("anonymous on the route: %v %+v", st, ctx.Replied)
	}
	if ctx, st := run(m, fakeframework.NewRequest("GET", "/", "x-api-key", bobKey)); st != api.Continue || ctx.Consumer().Name != "bob" {
		t.Fatalf("parent keys on the route: %v %+v", st, ctx.Replied)
	}
	// The parent is unchanged.
	if _, st := run(parent, fakeframework.NewRequest("GET", "/")); st != api.Stop {
		t.Fatal("parent became anonymous")
	}
	// A route with its own consumers replaces the parent's.
	own, _, err := parse(t, `{"consumers":[{"name":"zed","keys":["zed-key-123456"]}]}`, true)
	if err != nil {
		t.Fatal(err)
	}
	m = merge(parent, own).(*Config)
	if _, st := run(m, fakeframework.NewRequest("GET", "/", "apikey", bobKey)); st != api.Stop {
		t.Fatal("parent key accepted on a route with its own consumers")
	}
}

func TestRouteOnlyConfigWithoutConsumersRefuses(t *testing.T) {
	c, _, err := parse(t, `{}`, true)
	if err != nil {
		t.Fatal(err)
	}
	if ctx, st := run(c, fakeframework.NewRequest("GET", "/", "apikey", aliceKey)); st != api.Stop || ctx.Replied.Code != 401 {
		t.Fatalf("got %v", st)
	}
}
