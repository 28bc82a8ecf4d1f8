package conformance

import (
	"strings"
	"testing"
)

// TestLoopbackGuard: under MOE_HOST_LOOPBACK_ONLY=1 (set by the harness) an upstream outside
// 127.0.0.0/8 and ::1 is refused before the socket connects: the client gets what Envoy answers
// for a connect failure (router.cc onUpstreamReset: 503, reset reason "remote connection
// failure"), the connect-failure stats count it, and so does
// moe_host.upstream_cx_non_loopback_refused. The address is 0.0.0.0: outside 127.0.0.0/8, so
// the guard must refuse it, yet a connect to it never leaves the machine even if the guard
// failed (Linux sends it to the local host, where port 80 is closed). It covers a STATIC
// host, an address a STRICT_DNS cluster resolved, and an override host.
func TestLoopbackGuard(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	// The guard refuses on purpose here: the end of the host's life does not require 0.
	h := startHost(t, hostSpec{tmpl: "guard", listeners: []string{"main"}, data: map[string]any{"A1": a1.Port}, allowNonLoopback: true})
	const refused = "moe_host.upstream_cx_non_loopback_refused"
	if _, ok := h.stats(t)[refused]; !ok {
		t.Fatalf("/stats has no %s: the guard is not on", refused)
	}
	const body = "upstream connect error or disconnect/reset before headers. reset reason: remote connection failure"
	n := int64(0)
	for _, c := range []struct {
		name, path string
		hdr        map[string]string
	}{
		{"StaticHost", "/static", hdrs("x-test-basic", "1")},
		{"StrictDnsResolvedAddress", "/dns", hdrs("x-test-basic", "1")},
		{"OverrideHost", "/override", hdrs("x-test-basic", "1", "x-test-override-host", "0.0.0.0:80", "x-test-override-strict", "true")},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := h.stats(t)
			r := h.must(t, req{listener: "main", path: c.path, headers: c.hdr})
			n++
			if r.status != 503 || r.body != body {
				t.Errorf("got %d %q, want 503 %q", r.status, r.body, body)
			}
			if d := r.get("rsp-response-code-details"); !strings.Contains(d, "remote_connection_failure") || !strings.Contains(d, "0.0.0.0:80") {
				t.Errorf("response code details %q, want the connect failure naming 0.0.0.0:80", d)
			}
			after := h.stats(t)
			if after[refused] != n {
				t.Errorf("%s = %d, want %d", refused, after[refused], n)
			}
			if d := after["moe_host.upstream_cx_connect_fail"] - before["moe_host.upstream_cx_connect_fail"]; d != 1 {
				t.Errorf("upstream_cx_connect_fail grew by %d, want 1 (a refusal is a connect failure)", d)
			}
		})
	}
	// Loopback traffic is untouched.
	if r := h.must(t, req{listener: "main", path: "/echo"}); r.status != 200 || r.get("x-upstream") != "a1" {
		t.Errorf("loopback upstream: %d %q", r.status, r.get("x-upstream"))
	}
	if !strings.Contains(h.Output(), "refused upstream connect to 0.0.0.0:80") {
		t.Errorf("the refusal is not logged:\n%s", tail(h.Output(), 4000))
	}
}
