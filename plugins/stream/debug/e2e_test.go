package debug_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

const exampleSecret = "debug-secret-change-me-2026"

var entry = regexp.MustCompile(`^[a-z0-9_-]+;dur=[0-9]+\.[0-9]{3}(;[a-z_]+=([0-9.]+|allow|deny|"[^"]*"))*$`)

func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/debug.yaml")
	key := []string{"x-api-key", "alice-key-0123456789"}
	resp, _ := hosttest.Get(t, h.URL+"/api/orders", append(key, "x-moe-debug", exampleSecret)...)
	tr := resp.Header.Get("x-moe-debug-trace")
	if resp.StatusCode != 200 {
		t.Fatalf("%d", resp.StatusCode)
	}
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-moe-debug") != "" {
		t.Errorf("the secret reached the upstream: %v", e.Headers)
	}
	parts := strings.Split(tr, ", ")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "moe;dur=") || !strings.HasPrefix(parts[1], "key-auth;dur=") ||
		!strings.Contains(parts[1], `;recv=`) || !strings.HasSuffix(parts[1], `;decision=allow;desc="consumer alice"`) ||
		!strings.HasPrefix(parts[2], "limit-req;dur=") {
		t.Fatalf("trace %q", tr)
	}
	for _, p := range parts {
		if !entry.MatchString(p) {
			t.Errorf("entry %q is not Server-Timing syntax", p)
		}
	}
	t.Logf("x-moe-debug-trace: %s", tr)

	resp, body := hosttest.Get(t, h.URL+"/api/orders", "x-moe-debug", exampleSecret)
	if tr := resp.Header.Get("x-moe-debug-trace"); resp.StatusCode != 401 || body != "missing API key\n" ||
		!strings.Contains(tr, `key-auth;dur=`) || !strings.Contains(tr, `decision=deny;status=401;desc="missing API key"`) {
		t.Fatalf("refused: %d %q trace %q", resp.StatusCode, body, tr)
	}
	resp, _ = hosttest.Get(t, h.URL+"/api/orders", append(key, "x-moe-debug", "wrong")...)
	if resp.StatusCode != 200 || resp.Header.Get("x-moe-debug-trace") != "" {
		t.Fatalf("wrong secret: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = hosttest.Get(t, h.URL+"/other", append(key, "x-moe-debug", exampleSecret)...)
	if resp.StatusCode != 200 || resp.Header.Get("x-moe-debug-trace") != "" {
		t.Fatalf("route without the plugin: %d %v", resp.StatusCode, resp.Header)
	}

	// Slow-request log: 300 ms at the upstream against a 200 ms threshold.
	resp, _ = hosttest.Get(t, h.URL+"/slow/300?api_key=do-not-log", key...)
	if resp.StatusCode != 200 {
		t.Fatalf("/slow/300: %d", resp.StatusCode)
	}
	resp.Body.Close()
	resp, _ = hosttest.Get(t, h.URL+"/slow/10", key...) // fast: not logged
	resp.Body.Close()
	var line string
	tb.Poll(5*time.Second, func() bool {
		for _, l := range strings.Split(h.Output(), "\n") {
			if strings.Contains(l, "slow request: ") {
				line = l
			}
		}
		return line != ""
	})
	// The upstream waits 300ms; a loaded machine may add to it, never take away.
	m := regexp.MustCompile(`\[moe\]\[debug\]\[[^]]+\] slow request: GET /slow/300 took ([0-9]+)\.[0-9]+ms \(slow_threshold 200ms\), status 200; plugins: moe;dur=[0-9.]+, key-auth;dur=`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("slow log line %q", line)
	}
	if ms, _ := strconv.Atoi(m[1]); ms < 300 {
		t.Errorf("slow request took %dms, below the upstream's 300ms", ms)
	}
	for _, never := range []string{exampleSecret, "do-not-log", "alice-key"} {
		if strings.Contains(h.Output(), never) {
			t.Errorf("moe-host output shows %q", never)
		}
	}
	if strings.Count(h.Output(), "slow request: ") != 1 {
		t.Errorf("want exactly one slow-request line:\n%s", h.Output())
	}
	for name, want := range map[string]int64{"traced": 2, "bad_secret": 1, "slow_requests": 1} {
		if got := h.Counter(t, "moe_debug_"+name); got != want {
			t.Errorf("moe_debug_%s = %d, want %d", name, got, want)
		}
	}
}

func TestE2EBadConfigRefused(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{{Name: "debug", Config: map[string]any{"secret": "tooshort"}}},
	})
	for _, want := range []string{`"debug"`, "field secret", "16 to 1024 bytes"} {
		if !strings.Contains(out, want) {
			t.Errorf("host output does not name %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "tooshort") && !strings.Contains(out, `"secret":"tooshort"`) && !strings.Contains(out, "secret: tooshort") {
		t.Errorf("the error shows the secret:\n%s", out)
	}
}
