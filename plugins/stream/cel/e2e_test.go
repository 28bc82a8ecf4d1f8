package cel_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/cel.yaml")
	alice := []string{"x-api-key", "alice-key-0123456789"}
	bob := []string{"x-api-key", "bob-key-01234567890"}

	resp, _ := hosttest.Send(t, "POST", h.URL+"/orders", "x", alice...)
	if resp.StatusCode != 200 {
		t.Fatalf("alice POST: %d", resp.StatusCode)
	}
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-tier") != "gold" {
		t.Errorf("alice: upstream saw x-tier %q", e.Header("x-tier"))
	}
	resp, body := hosttest.Send(t, "POST", h.URL+"/orders", "x", bob...)
	if resp.StatusCode != 402 || body != "upgrade to write\n" {
		t.Fatalf("bob POST: %d %q", resp.StatusCode, body)
	}
	resp, _ = hosttest.Get(t, h.URL+"/orders", append(bob, "x-canary", "1")...)
	if resp.StatusCode != 200 || resp.Header.Get("x-marks") != "canary" {
		t.Fatalf("bob canary: %d %v", resp.StatusCode, resp.Header)
	}
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-tier") != "free" {
		t.Errorf("bob: upstream saw x-tier %q", e.Header("x-tier"))
	}
	resp, body = hosttest.Get(t, h.URL+"/orders", append(bob, "user-agent", "OldClient/1.2")...)
	if resp.StatusCode != 426 || body != "upgrade your client\n" {
		t.Fatalf("old client: %d %q", resp.StatusCode, body)
	}
	resp, _ = hosttest.Get(t, h.URL+"/status/503", bob...)
	if resp.StatusCode != 503 || resp.Header.Get("cache-control") != "no-store" || resp.Header.Get("x-marks") != "" {
		t.Fatalf("503: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body = hosttest.Get(t, h.URL+"/admin/users", bob...)
	if resp.StatusCode != 403 || body != "admins only\n" {
		t.Fatalf("/admin: %d %q", resp.StatusCode, body)
	}
	resp, _ = hosttest.Get(t, h.URL+"/orders")
	if resp.StatusCode != 401 {
		t.Fatalf("anonymous: %d", resp.StatusCode)
	}
	// The log rule: every refused request above, in order, at the log point.
	want := []string{"POST /orders -> 402 consumer=bob", "GET /orders -> 426 consumer=bob", "GET /status/503 -> 503 consumer=bob", "GET /orders -> 401 consumer=-"}
	line := regexp.MustCompile(`\[moe\]\[cel\]\[[^]]+\] rule refused: (.*)`)
	var got []string
	tb.Poll(5*time.Second, func() bool {
		got = got[:0]
		for _, m := range line.FindAllStringSubmatch(h.Output(), -1) {
			got = append(got, strings.TrimSpace(m[1]))
		}
		return len(got) >= len(want)
	})
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("log rule lines %q, want %q", got, want)
	}
	// /admin has its own config: the chain's log rule does not run there.
	for name, want := range map[string]int64{"denied": 3, "tier_matched": 4, "canary_matched": 1, "refused_matched": 4, "errors": 0} {
		if got := h.Counter(t, "moe_cel_"+name); got != want {
			t.Errorf("moe_cel_%s = %d, want %d", name, got, want)
		}
	}
}

// A CEL error is a config error with its position, and moe-host refuses to start.
func TestE2EBadExpressionRefused(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{{Name: "cel", Config: map[string]any{"rules": []any{
			map[string]any{"when": `request.headers["x"] == 1`, "mark": "x"},
		}}}},
	})
	for _, want := range []string{`"cel"`, "rules[0].when", "line 1, column 22", "no matching overload"} {
		if !strings.Contains(out, want) {
			t.Errorf("host output does not name %q:\n%s", want, out)
		}
	}
}
