package iprestriction_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// get sends a GET through the host with optional X-Forwarded-For lines and
// returns status and body.
func get(t *testing.T, url string, xff ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range xff {
		req.Header.Add("X-Forwarded-For", v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// moe-host connects to us from 127.0.0.1, so loopback is the downstream address.
func TestE2EDownstreamAddress(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{{Name: "ip-restriction", Config: map[string]any{
			"deny": []string{"127.0.0.0/8"}, "message": "blocked by ip-restriction",
		}}},
		// /special is served from the route config, which replaces the filter-level one.
		RoutePlugins: []hosttest.Plugin{{Name: "ip-restriction", Config: map[string]any{
			"allow": []string{"127.0.0.1", "::1"},
		}}},
	})
	if code, body := get(t, h.URL+"/x"); code != 403 || body != "blocked by ip-restriction" {
		t.Fatalf("denied loopback: got %d %q", code, body)
	}
	if code, body := get(t, h.URL+"/special/x"); code != 200 || !strings.Contains(body, `"path":"/special/x"`) {
		t.Fatalf("route allow: got %d %q", code, body)
	}
	// XFF is ignored with xff_num_trusted_hops 0: a spoofed header changes nothing.
	if code, _ := get(t, h.URL+"/x", "192.0.2.1"); code != 403 {
		t.Fatalf("spoofed XFF must not help: got %d", code)
	}
	if n := h.Counter(t, "moe_ip_restriction_denied_deny_list"); n != 2 {
		t.Errorf("denied_deny_list= %d, want 2", n)
	}
	if n := h.Counter(t, "moe_ip_restriction_allowed"); n != 1 {
		t.Errorf("allowed= %d, want 1", n)
	}
}

func TestE2EForwardedFor(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{{Name: "ip-restriction", Config: map[string]any{
			"allow": []string{"192.0.2.0/24", "2001:db8::/32"}, "deny": []string{"192.0.2.66"},
			"xff_num_trusted_hops": 2,
		}}},
	})
	cases := []struct {
		name string
		xff  []string
		want int
	}{
		{"second from right allowed", []string{"6.6.6.6, 192.0.2.1, 10.0.0.1"}, 200},
		{"IPv6 client allowed", []string{"2001:db8::7, 10.0.0.1"}, 200},
		{"split over two header lines", []string{"192.0.2.1", "10.0.0.1"}, 200},
		{"left-most spoof ignored", []string{"192.0.2.1, 6.6.6.6, 10.0.0.1"}, 403},
		{"deny wins", []string{"192.0.2.66, 10.0.0.1"}, 403},
		{"too short", []string{"192.0.2.1"}, 403},
		{"missing", nil, 403},
		{"malformed", []string{"192.0.2.1garbage, 10.0.0.1"}, 403},
		{"unicode digits", []string{"１９２.0.2.1, 10.0.0.1"}, 403},
		{"oversized entry", []string{strings.Repeat("1", 8000) + ", 10.0.0.1"}, 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := get(t, h.URL+"/", tc.xff...); code != tc.want {
				t.Fatalf("XFF %q: got %d %q, want %d", tc.xff, code, body, tc.want)
			}
		})
	}
	if n := h.Counter(t, "moe_ip_restriction_denied_bad_address"); n != 5 {
		t.Errorf("denied_bad_address= %d, want 5", n)
	}
	if n := h.Counter(t, "moe_ip_restriction_denied_deny_list") + h.Counter(t, "moe_ip_restriction_denied_not_allowed"); n != 2 {
		t.Errorf("denied_deny_list + denied_not_allowed = %d, want 2", n)
	}
}

func TestE2EBadConfigRefused(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{{Name: "ip-restriction", Config: map[string]any{
			"allow": []string{"10.0.0.0/8", "10.0.0.0/40"},
		}}},
	})
	for _, want := range []string{"ip-restriction", "allow[1]", "invalid CIDR"} {
		if !strings.Contains(out, want) {
			t.Errorf("host output does not name %q:\n%s", want, out)
		}
	}
}

// TestE2EExample runs envoy/examples/ip-restriction.yaml unchanged except for
// ports and the library path, and replays the requests its header promises.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/ip-restriction.yaml")
	cases := []struct {
		path string
		xff  []string
		want int
	}{
		{"/", nil, 200},
		{"/partners/x", nil, 403},
		{"/partners/x", []string{"192.0.2.10"}, 200},
		{"/partners/x", []string{"192.0.2.10, 203.0.113.5"}, 403},
		{"/partners/x", []string{"junk"}, 403},
	}
	for _, tc := range cases {
		if code, body := get(t, h.URL+tc.path, tc.xff...); code != tc.want {
			t.Errorf("%s XFF %q: got %d %q, want %d", tc.path, tc.xff, code, body, tc.want)
		}
	}
}
