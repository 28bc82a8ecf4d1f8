package cors_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// chromeHeaders are the headers Chromium sends with a preflight, besides
// Origin and the Access-Control-Request-* pair.
var chromeHeaders = []string{
	"accept", "*/*",
	"accept-language", "en-US,en;q=0.9",
	"sec-fetch-mode", "cors",
	"sec-fetch-site", "cross-site",
	"sec-fetch-dest", "empty",
	"referer", "https://app.example.com/",
	"user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
}

func send(t *testing.T, method, url string, kv ...string) (*http.Response, string) {
	t.Helper()
	resp, body := hosttest.Send(t, method, url, "", kv...)
	if resp.StatusCode == 200 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
	}
	return resp, body
}

func corsHeaders(h http.Header) []string {
	var out []string
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			out = append(out, k)
		}
	}
	return out
}

// The documented example through moe-host, with preflights exactly as a
// browser sends them.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/cors.yaml")
	pre := append([]string{"origin", "https://app.example.com", "access-control-request-method", "PUT",
		"access-control-request-headers", "authorization,content-type"}, chromeHeaders...)
	resp, body := send(t, "OPTIONS", h.URL+"/api/orders", pre...)
	want := map[string]string{
		"Access-Control-Allow-Origin":      "https://app.example.com",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Allow-Methods":     "GET, POST, PUT, DELETE",
		"Access-Control-Allow-Headers":     "authorization, content-type, x-request-id",
		"Access-Control-Max-Age":           "600",
	}
	if resp.StatusCode != 204 || body != "" || resp.Header.Get("x-upstream") != "" {
		t.Fatalf("preflight: %d %q %v (x-upstream means it reached the upstream)", resp.StatusCode, body, resp.Header)
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("preflight %s = %q, want %q", k, got, v)
		}
	}
	if !strings.Contains(resp.Header.Get("Vary"), "Origin") {
		t.Errorf("preflight Vary %q", resp.Header.Get("Vary"))
	}

	// The actual request of an allowed (wildcard) origin; the upstream's own
	// CORS header is replaced.
	resp, body = send(t, "PUT", h.URL+"/api/orders", "origin", "https://shop.eu.example.com", "x-echo-resp-access-control-allow-origin", "*")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://shop.eu.example.com" ||
		resp.Header.Get("Access-Control-Expose-Headers") != "x-upstream" || resp.Header.Get("Access-Control-Allow-Credentials") != "true" ||
		resp.Header.Get("Vary") != "Origin" || !strings.Contains(body, `"method":"PUT"`) {
		t.Fatalf("allowed origin: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if v := resp.Header.Values("Access-Control-Allow-Origin"); len(v) != 1 {
		t.Errorf("allow-origin %v: the upstream's stayed", v)
	}

	// A disallowed origin: the request runs (CORS does not stop it), but the
	// answer has no CORS header, not even the upstream's.
	resp, _ = send(t, "GET", h.URL+"/api/orders", "origin", "https://evil.example.net", "x-echo-resp-access-control-allow-origin", "*",
		"x-echo-resp-access-control-allow-credentials", "true")
	if resp.StatusCode != 200 || len(corsHeaders(resp.Header)) > 0 {
		t.Fatalf("disallowed origin: %d, CORS headers %v", resp.StatusCode, corsHeaders(resp.Header))
	}
	resp, body = send(t, "OPTIONS", h.URL+"/api/orders", append([]string{"origin", "https://evil.example.net", "access-control-request-method", "PUT"}, chromeHeaders...)...)
	if resp.StatusCode != 403 || body != "CORS preflight refused: origin not allowed\n" || len(corsHeaders(resp.Header)) > 0 {
		t.Fatalf("disallowed preflight: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = send(t, "OPTIONS", h.URL+"/api/orders", append([]string{"origin", "https://app.example.com", "access-control-request-method", "PATCH"}, chromeHeaders...)...)
	if resp.StatusCode != 403 || body != "CORS preflight refused: method not allowed\n" {
		t.Fatalf("preflight for PATCH: %d %q", resp.StatusCode, body)
	}

	// /public: any origin, "*".
	resp, _ = send(t, "GET", h.URL+"/public/logo", "origin", "https://anyone.test")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Vary") != "" {
		t.Fatalf("/public: %d %v", resp.StatusCode, resp.Header)
	}
	// /partner: only its own origin.
	resp, _ = send(t, "GET", h.URL+"/partner/x", "origin", "https://app.example.com")
	if len(corsHeaders(resp.Header)) > 0 {
		t.Fatalf("/partner from app.example.com: %v", resp.Header)
	}
	resp, _ = send(t, "GET", h.URL+"/partner/x", "origin", "https://partner.example.net")
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://partner.example.net" {
		t.Fatalf("/partner from its origin: %v", resp.Header)
	}
	// A request without Origin is left alone except for Vary.
	resp, _ = send(t, "GET", h.URL+"/api/x")
	if len(corsHeaders(resp.Header)) > 0 || resp.Header.Get("Vary") != "Origin" {
		t.Fatalf("no Origin: %v", resp.Header)
	}

	for name, want := range map[string]int64{"preflights": 1, "preflights_refused": 2, "allowed": 3, "disallowed": 2} {
		if got := h.Counter(t, "moe_cors_"+name); got != want {
			t.Errorf("moe_cors_%s = %d, want %d", name, got, want)
		}
	}
}

func TestE2EBadConfigRefused(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{{Name: "cors", Config: map[string]any{"allow_origins": []string{"*"}, "allow_credentials": true}}},
	})
	for _, want := range []string{"cors", "allow_origins[0]", "cannot be combined with allow_credentials"} {
		if !strings.Contains(out, want) {
			t.Errorf("host output does not name %q:\n%s", want, out)
		}
	}
}
