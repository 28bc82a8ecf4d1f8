package extauth

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// startExample runs envoy/examples/ext-auth.yaml with test addresses: the
// authorization service (:9002) is a second echo upstream, as in the file's
// instructions, and :9003 stays dead.
func startExample(t *testing.T) *hosttest.Host {
	t.Helper()
	return hosttest.StartExample(t, "envoy/examples/ext-auth.yaml", hosttest.ExampleOptions{Replace: map[string]string{
		"http://127.0.0.1:9002": "http://127.0.0.1:" + strconv.Itoa(hosttest.EchoUpstream(t)),
		"http://127.0.0.1:9003": deadURL(t),
	}})
}

// TestE2EExample runs the documented example with the requests from its header.
func TestE2EExample(t *testing.T) {
	h := startExample(t)

	resp, _ := hosttest.Send(t, "GET", h.URL+"/items", "")
	if e := hosttest.DecodeEcho(t, resp); e.Path != "/items" {
		t.Fatalf("allowed request: %+v", e)
	}
	resp, body := hosttest.Send(t, "GET", h.URL+"/status/401", "")
	if resp.StatusCode != 401 || !strings.Contains(body, "/status/401") {
		t.Fatalf("denial not relayed: %d %q", resp.StatusCode, body)
	}
	start := time.Now()
	resp, body = hosttest.Send(t, "GET", h.URL+"/delay/500", "")
	if resp.StatusCode != 403 || body != "authorization service unavailable\n" {
		t.Fatalf("timeout: %d %q", resp.StatusCode, body)
	}
	if el := time.Since(start); el > 450*time.Millisecond {
		t.Fatalf("timeout took %s (timeout 200ms)", el)
	}
	resp, _ = hosttest.Send(t, "GET", h.URL+"/lenient/x", "")
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-envoy-auth-failure-mode-allowed") != "true" {
		t.Fatalf("fail open: %v", e.Headers)
	}
	resp, _ = hosttest.Send(t, "GET", h.URL+"/public/x", "")
	hosttest.DecodeEcho(t, resp)
	// Same request again: served from the cache.
	resp, _ = hosttest.Send(t, "GET", h.URL+"/items", "")
	resp.Body.Close()

	for name, min := range map[string]int64{
		"moe_ext_auth_allowed": 2, "moe_ext_auth_denied": 1, "moe_ext_auth_timeout": 1,
		"moe_ext_auth_error": 1, "moe_ext_auth_failure_mode_allowed": 1, "moe_ext_auth_cache_hit": 1,
	} {
		if got := h.Counter(t, name); got < min {
			t.Errorf("%s = %d, want >= %d", name, got, min)
		}
	}
}

// TestE2EAuthService: header forwarding and copying, deny relay, request body
// forwarding, consumer, against a real service, through moe-host.
func TestE2EAuthService(t *testing.T) {
	svc := newAuthService(t)
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: []hosttest.Plugin{{
		Name: "ext-auth",
		Config: map[string]any{
			"url": svc.URL, "path_prefix": "/check", "timeout": "1s",
			"allowed_headers":          []string{"authorization", "x-tenant"},
			"allowed_upstream_headers": []string{"x-user"},
			"allowed_client_headers":   []string{"www-authenticate"},
			"consumer_from_header":     "x-user",
			"with_request_body":        map[string]any{"max_request_bytes": 8, "allow_partial_message": true},
		},
	}}})

	resp, _ := hosttest.Send(t, "POST", h.URL+"/orders?id=7", "0123456789", "authorization", "Bearer good", "x-tenant", "t1", "x-user", "mallory", "cookie", "s=1")
	e := hosttest.DecodeEcho(t, resp)
	if e.Header("x-user") != "alice" || e.Header("x-consumer-name") != "alice" || len(e.Values("X-User")) != 1 {
		t.Fatalf("upstream headers: %v", e.Headers)
	}
	if e.Header("x-internal") != "" {
		t.Fatal("header outside allowed_upstream_headers copied")
	}
	if e.Body != "0123456789" {
		t.Fatalf("upstream body %q", e.Body)
	}
	got := svc.lastSeen()
	if got.Method != "POST" || got.URI != "/check/orders?id=7" || got.Body != "01234567" ||
		got.Header.Get("X-Tenant") != "t1" || got.Header.Get("Cookie") != "" || got.Header.Get("X-Envoy-Auth-Partial-Body") != "true" {
		t.Fatalf("check request: %+v", got)
	}

	resp, body := hosttest.Send(t, "GET", h.URL+"/", "", "authorization", "Bearer bad")
	if resp.StatusCode != 401 || body != "denied by service" || resp.Header.Get("www-authenticate") != `Bearer realm="svc"` || resp.Header.Get("x-extra") != "" {
		t.Fatalf("deny relay: %d %q %v", resp.StatusCode, body, resp.Header)
	}
}

func TestE2EDeadServiceFailClosed(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: []hosttest.Plugin{{
		Name: "ext-auth", Config: map[string]any{"url": deadURL(t), "status_on_error": 503},
	}}})
	resp, body := hosttest.Send(t, "GET", h.URL+"/", "", "authorization", "Bearer good")
	if resp.StatusCode != 503 || body != "authorization service unavailable\n" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

func TestE2EBadConfigIsRefused(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{Plugins: []hosttest.Plugin{{
		Name: "ext-auth", Config: map[string]any{"url": "http://127.0.0.1:1", "timeout": "0s"},
	}}})
	for _, want := range []string{"ext-auth", "timeout", "must be between 1ms and 1m0s, got 0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
