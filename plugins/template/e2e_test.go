package template_test

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// The documented example, through moe-host and the real libgolang.so.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/template.yaml")
	resp, body := hosttest.Get(t, h.URL+"/orders")
	if resp.StatusCode != 400 || body != "missing x-tenant\n" || resp.Header.Get("x-moe-template") != "orders" {
		t.Fatalf("without x-tenant: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, _ = hosttest.Get(t, h.URL+"/orders", "x-tenant", "t1")
	if resp.StatusCode != 200 || resp.Header.Get("x-moe-template") != "orders" {
		t.Fatalf("with x-tenant: %d %v", resp.StatusCode, resp.Header)
	}
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-tenant") != "t1" {
		t.Fatalf("upstream saw %v", e.Headers)
	}
	resp, _ = hosttest.Get(t, h.URL+"/health")
	if resp.StatusCode != 200 || resp.Header.Get("x-moe-template") != "" {
		t.Fatalf("/health (plugin disabled): %d %v", resp.StatusCode, resp.Header)
	}
	if got := h.Counter(t, "moe_template_denied"); got != 1 {
		t.Fatalf("moe_template_denied = %d, want 1", got)
	}
}
