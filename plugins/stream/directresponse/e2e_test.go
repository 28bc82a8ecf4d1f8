package directresponse_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

const page = "envoy/examples/direct-response-maintenance.html"

// The documented example, through moe-host and the real libgolang.so. The
// maintenance page's path is made absolute (moe-host runs in the test's
// directory; make example runs from the repository root).
func TestE2EExample(t *testing.T) {
	abs := filepath.Join(hosttest.RepoRoot(t), page)
	want, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	h := hosttest.StartExample(t, "envoy/examples/direct-response.yaml", hosttest.ExampleOptions{Replace: map[string]string{page: abs}})

	resp, _ := hosttest.Get(t, h.URL+"/healthz")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" || resp.Header.Get("x-upstream") != "" {
		t.Fatalf("/healthz: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, _ = hosttest.Send(t, http.MethodHead, h.URL+"/healthz", "")
	if resp.StatusCode != 200 || resp.Header.Get("x-upstream") != "" {
		t.Fatalf("HEAD /healthz: %d %v", resp.StatusCode, resp.Header)
	}
	resp.Body.Close()

	resp, _ = hosttest.Send(t, http.MethodPost, h.URL+"/mock/users/1", `{"name": "bob"}`)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"id": 1, "name": "alice"}` || resp.Header.Get("content-type") != "application/json" {
		t.Fatalf("mock: %d %q %v", resp.StatusCode, body, resp.Header)
	}

	resp, body2 := hosttest.Get(t, h.URL+"/shop/cart")
	if resp.StatusCode != 503 || body2 != string(want) || resp.Header.Get("content-type") != "text/html; charset=utf-8" || resp.Header.Get("retry-after") != "3600" {
		t.Fatalf("/shop/cart: %d %q %v", resp.StatusCode, body2, resp.Header)
	}

	resp, _ = hosttest.Get(t, h.URL+"/orders")
	if e := hosttest.DecodeEcho(t, resp); resp.StatusCode != 200 || e.Path != "/orders" {
		t.Fatalf("/orders: %d", resp.StatusCode)
	}
	if got := h.Counter(t, "moe_direct_response_responses"); got != 4 {
		t.Fatalf("responses = %d, want 4", got)
	}
}

// A body file that cannot be read refuses the config at start, naming the
// field.
func TestE2EMissingBodyFileIsAConfigError(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{Plugins: []hosttest.Plugin{{
		Name:   "direct-response",
		Config: map[string]any{"rules": []any{map[string]any{"status": 503, "body_file": "/nonexistent/maintenance.html"}}},
	}}})
	if !containsAll(out, `plugin "direct-response"`, "rules[0].body_file", "no such file") {
		t.Fatalf("output:\n%s", out)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
