package consumerrestriction_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

func do(t *testing.T, method, url string, kv ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Without an auth plugin before it, every request has no consumer: 401.
func TestE2ENoConsumerIs401(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{{Name: "consumer-restriction", Config: map[string]any{
			"rules": []map[string]any{{"consumers": []string{"*"}}},
		}}},
	})
	code, body := do(t, "GET", h.URL+"/x")
	if code != 401 || body != "Authentication required\n" {
		t.Fatalf("got %d %q, want 401", code, body)
	}
	if n := h.Counter(t, "moe_consumer_restriction_denied_no_consumer"); n != 1 {
		t.Errorf("denied_no_consumer = %d, want 1", n)
	}
}

var keyAuth = hosttest.Plugin{Name: "key-auth", Config: map[string]any{
	"consumers": []map[string]any{
		{"name": "alice", "group": "admins", "keys": []string{"alice-secret-key"}},
		{"name": "bob", "group": "users", "keys": []string{"bob-secret-key-1"}},
	},
}}

// TestE2EAfterKeyAuth chains the plugin after key-auth, which sets the consumer.
func TestE2EAfterKeyAuth(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{keyAuth, {Name: "consumer-restriction", Config: map[string]any{
			"rules": []map[string]any{
				{"consumers": []string{"*"}, "methods": []string{"GET"}},
				{"groups": []string{"admins"}},
				{"action": "deny", "consumers": []string{"*"}, "paths": []string{"/admin/*"}},
			},
		}}},
		RoutePlugins: []hosttest.Plugin{{Name: "consumer-restriction", Config: map[string]any{
			"rules": []map[string]any{{"consumers": []string{"bob"}}}, "message": "special is bob's",
		}}},
	})
	const alice, bob = "alice-secret-key", "bob-secret-key-1"
	cases := []struct {
		name, method, path, key string
		want                    int
	}{
		{"no key: key-auth answers first", "GET", "/things", "", 401},
		{"bob reads", "GET", "/things", bob, 200},
		{"bob cannot write", "POST", "/things", bob, 403},
		{"alice writes", "DELETE", "/things/1", alice, 200},
		{"deny rule wins for admins", "GET", "/admin/users", alice, 403},
		{"bare prefix covered", "GET", "/admin", bob, 403},
		{"encoded bypass refused", "GET", "/%61dmin/users", alice, 403},
		{"dot-segment bypass refused", "GET", "/x/../admin/users", alice, 403},
		{"route config replaces: bob allowed", "POST", "/special/x", bob, 200},
		{"route config replaces: alice denied", "GET", "/special/x", alice, 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var kv []string
			if tc.key != "" {
				kv = []string{"apikey", tc.key}
			}
			code, body := do(t, tc.method, h.URL+tc.path, kv...)
			if code != tc.want {
				t.Fatalf("got %d %q, want %d", code, body, tc.want)
			}
			if code == 403 && strings.Contains(body, "secret") {
				t.Fatalf("reply leaks the credential: %q", body)
			}
		})
	}
	if n := h.Counter(t, "moe_consumer_restriction_denied_rule"); n != 4 {
		t.Errorf("denied_rule = %d, want 4", n)
	}
	if n := h.Counter(t, "moe_consumer_restriction_allowed"); n != 3 {
		t.Errorf("allowed = %d, want 3", n)
	}
}

func TestE2EBadConfigRefused(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{{Name: "consumer-restriction", Config: map[string]any{
			"rules": []map[string]any{{"groups": []string{"a"}}, {"consumers": []string{"b"}, "paths": []string{"admin/*"}}},
		}}},
	})
	for _, want := range []string{"consumer-restriction", "rules[1].paths[0]", "must start with '/'"} {
		if !strings.Contains(out, want) {
			t.Errorf("host output does not name %q:\n%s", want, out)
		}
	}
}

// TestE2EExample runs envoy/examples/consumer-restriction.yaml and replays the
// requests listed in its header.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/consumer-restriction.yaml")
	const alice, bob = "alice-secret-key", "bob-secret-key-1"
	cases := []struct {
		method, path, key string
		want              int
	}{
		{"GET", "/things", "", 401},
		{"GET", "/things", bob, 200},
		{"POST", "/things", bob, 403},
		{"POST", "/things", alice, 200},
		{"GET", "/admin/users", alice, 403},
		{"GET", "/%61dmin/users", alice, 403},
		{"GET", "/ops/status", alice, 200},
		{"GET", "/ops/status", bob, 403},
	}
	for _, tc := range cases {
		var kv []string
		if tc.key != "" {
			kv = []string{"apikey", tc.key}
		}
		if code, body := do(t, tc.method, h.URL+tc.path, kv...); code != tc.want {
			t.Errorf("%s %s key=%q: got %d %q, want %d", tc.method, tc.path, tc.key, code, body, tc.want)
		}
	}
}
