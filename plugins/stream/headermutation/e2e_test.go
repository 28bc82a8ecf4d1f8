package headermutation_test

import (
	"reflect"
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// The documented example, through moe-host and the real libgolang.so.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/header-mutation.yaml")

	resp, _ := hosttest.Get(t, h.URL+"/orders?user=alice", "x-via", "edge")
	if resp.StatusCode != 200 || resp.Header.Get("x-served-by") != "moe/api" || resp.Header.Get("x-upstream") != "" {
		t.Fatalf("response: %d %v", resp.StatusCode, resp.Header)
	}
	e := hosttest.DecodeEcho(t, resp)
	for k, want := range map[string][]string{
		"x-user": {"alice"}, "x-route": {"api"}, "x-tenant": {"default"}, "x-via": {"edge", "moe"}, "x-debug": nil,
	} {
		if got := e.Values(k); !reflect.DeepEqual(got, want) {
			t.Errorf("upstream %s = %q, want %q", k, got, want)
		}
	}

	// The client's x-user is removed (no user argument: nothing set); its
	// x-tenant is kept (add).
	resp, _ = hosttest.Get(t, h.URL+"/orders", "x-user", "root", "x-tenant", "t1")
	e = hosttest.DecodeEcho(t, resp)
	if e.Values("x-user") != nil || e.Header("x-tenant") != "t1" {
		t.Errorf("spoofed x-user %q, x-tenant %q", e.Values("x-user"), e.Header("x-tenant"))
	}

	// CR/LF from a decoded query argument never reaches the wire.
	resp, _ = hosttest.Get(t, h.URL+"/orders?user=alice%0d%0ax-admin:%201")
	e = hosttest.DecodeEcho(t, resp)
	if resp.StatusCode != 200 || e.Header("x-user") != "alice  x-admin: 1" || e.Values("x-admin") != nil {
		t.Errorf("injection attempt: %d x-user %q x-admin %q", resp.StatusCode, e.Header("x-user"), e.Values("x-admin"))
	}

	resp, _ = hosttest.Get(t, h.URL+"/orders?debug=1")
	if e = hosttest.DecodeEcho(t, resp); e.Header("x-debug") != "on" {
		t.Errorf("debug=1: x-debug %q", e.Header("x-debug"))
	}

	resp, _ = hosttest.Get(t, h.URL+"/status/404")
	if resp.StatusCode != 404 || resp.Header.Get("cache-control") != "no-store" || resp.Header.Get("x-served-by") != "moe/api" {
		t.Errorf("404: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = hosttest.Get(t, h.URL+"/orders")
	if resp.Header.Get("cache-control") != "" {
		t.Errorf("200 got cache-control %q", resp.Header.Get("cache-control"))
	}
	resp.Body.Close()

	resp, _ = hosttest.Get(t, h.URL+"/health?user=alice")
	if e = hosttest.DecodeEcho(t, resp); resp.Header.Get("x-served-by") != "" || resp.Header.Get("x-upstream") == "" || e.Values("x-user") != nil {
		t.Errorf("/health (disabled): %v, upstream x-user %q", resp.Header, e.Values("x-user"))
	}

	if got := h.Counter(t, "moe_header_mutation_condition_errors"); got != 0 {
		t.Errorf("condition_errors = %d, want 0 (the example's conditions guard optional keys)", got)
	}
	if got := h.Counter(t, "moe_header_mutation_sanitized_values"); got != 1 {
		t.Errorf("sanitized_values = %d, want 1", got)
	}
	if got := h.Counter(t, "moe_header_mutation_request_mutations"); got < 10 {
		t.Errorf("request_mutations = %d", got)
	}
}
