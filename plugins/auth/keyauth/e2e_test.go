package keyauth

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// TestE2EExample runs envoy/examples/key-auth.yaml through moe-host and the
// real libgolang.so with the requests listed at the top of that file.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/key-auth.yaml")

	resp, body := hosttest.Get(t, h.URL+"/")
	if resp.StatusCode != 401 || resp.Header.Get("www-authenticate") != `Key realm="moe"` || body != "missing API key\n" {
		t.Fatalf("no key: %d %q %q", resp.StatusCode, resp.Header.Get("www-authenticate"), body)
	}

	resp, _ = hosttest.Get(t, h.URL+"/", "x-api-key", "alice-key-2026-a", "x-consumer-name", "root")
	e := hosttest.DecodeEcho(t, resp)
	if e.Header("x-consumer-name") != "alice" || len(e.Values("X-Consumer-Name")) != 1 {
		t.Fatalf("consumer header upstream: %v", e.Headers)
	}
	if e.Header("x-api-key") != "" {
		t.Fatal("hide_credentials: key reached the upstream")
	}

	resp, _ = hosttest.Get(t, h.URL+"/", "x-api-key", "alice-key-2026-b") // the rotation key
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "alice" {
		t.Fatalf("second key: %v", e.Headers)
	}

	// carol is a chain-level consumer (the moe config's consumers:, auth.key-auth).
	resp, _ = hosttest.Get(t, h.URL+"/", "x-api-key", "carol-key-2026-c1", "x-consumer-name", "alice")
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "carol" || len(e.Values("X-Consumer-Name")) != 1 || e.Header("x-api-key") != "" {
		t.Fatalf("chain-level consumer: %v", e.Headers)
	}

	resp, _ = hosttest.Get(t, h.URL+"/items?x=1&api_key=bob-key-2026-b1&y=2")
	e = hosttest.DecodeEcho(t, resp)
	if e.Header("x-consumer-name") != "bob" || e.URI != "/items?x=1&y=2" {
		t.Fatalf("query key: consumer %q path %q", e.Header("x-consumer-name"), e.URI)
	}

	resp, _ = hosttest.Get(t, h.URL+"/", "cookie", "a=1; api_key=bob-key-2026-b1")
	e = hosttest.DecodeEcho(t, resp)
	if e.Header("x-consumer-name") != "bob" || strings.Contains(e.Header("cookie"), "api_key") {
		t.Fatalf("cookie key: %v", e.Headers)
	}

	for _, tc := range []struct {
		name, url, reason string
		hdr               []string
	}{
		{"wrong key", "/", "invalid API key", []string{"x-api-key", "wrong-key-000"}},
		{"CRLF smuggled in a query key", "/?api_key=alice-key-2026-a%0d%0ax-admin:%201", "malformed API key", nil},
		{"oversized key", "/", "malformed API key", []string{"x-api-key", strings.Repeat("k", 2000)}},
		{"unicode near-miss", "/?api_key=alice-key-2026-%D0%B0", "invalid API key", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := hosttest.Get(t, h.URL+tc.url, tc.hdr...)
			if resp.StatusCode != 401 || body != tc.reason+"\n" {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
			if strings.Contains(body, "alice-key") || strings.Contains(body, "kkkk") {
				t.Fatalf("body echoes the key: %q", body)
			}
		})
	}

	// Per-route anonymous access on /public/ with the filter's keys.
	resp, _ = hosttest.Get(t, h.URL+"/public/x")
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "guest" {
		t.Fatalf("anonymous route: %v", e.Headers)
	}
	resp, _ = hosttest.Get(t, h.URL+"/public/x", "x-api-key", "bob-key-2026-b1")
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "bob" {
		t.Fatalf("key on the anonymous route: %v", e.Headers)
	}
	// The route lists no consumers: it keeps the filter's index, chain consumers included.
	resp, _ = hosttest.Get(t, h.URL+"/public/x", "x-api-key", "carol-key-2026-c1")
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "carol" {
		t.Fatalf("chain-level consumer on the anonymous route: %v", e.Headers)
	}
	resp, _ = hosttest.Get(t, h.URL+"/public/x", "x-api-key", "wrong-key-000")
	if resp.StatusCode != 401 {
		t.Fatalf("wrong key on the anonymous route: %d", resp.StatusCode)
	}

	stats := h.Stats(t)
	for name, min := range map[string]int64{
		"moe_key_auth_allowed": 7, "moe_key_auth_anonymous": 1, "moe_key_auth_denied_missing": 1,
		"moe_key_auth_denied_invalid": 3, "moe_key_auth_denied_malformed": 2,
	} {
		if got := h.Counter(t, name); got < min {
			t.Errorf("%s = %d, want >= %d (stats: %v)", name, got, min, stats)
		}
	}
}

func TestE2EBadConfigIsRefused(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{Plugins: []hosttest.Plugin{{
		Name: "key-auth",
		Config: map[string]any{"consumers": []map[string]any{
			{"name": "a", "keys": []string{"shared-key-123"}},
			{"name": "b", "keys": []string{"shared-key-123"}},
		}},
	}}})
	for _, want := range []string{"key-auth", "consumers[1].keys[0]", "keys must be unique"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "shared-key-123") {
		t.Errorf("the refusal prints the key:\n%s", out)
	}
}
