package accesslog_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// jsonLines returns the JSON objects in text whose "uri" starts with prefix.
func jsonLines(text, prefix string) []map[string]string {
	var out []map[string]string
	for _, l := range strings.Split(text, "\n") {
		i := strings.Index(l, `{"`)
		if i < 0 {
			continue
		}
		var m map[string]string
		if json.Unmarshal([]byte(l[i:]), &m) == nil && strings.HasPrefix(m["uri"], prefix) {
			out = append(out, m)
		}
	}
	return out
}

// The documented example through moe-host: JSON lines on the host's stdout,
// one per request, with the outcome; none for the route that disables it.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/access-log.yaml")
	resp, _ := hosttest.Get(t, h.URL+"/orders?id=7", "user-agent", "demo")
	if resp.StatusCode != 200 {
		t.Fatalf("/orders: %d", resp.StatusCode)
	}
	resp, _ = hosttest.Get(t, h.URL+"/status/503")
	if resp.StatusCode != 503 {
		t.Fatalf("/status/503: %d", resp.StatusCode)
	}
	hosttest.Get(t, h.URL+"/health")
	tb.Eventually(t, "two lines", func() bool { return len(jsonLines(h.Output(), "/")) >= 2 })
	lines := jsonLines(h.Output(), "/")
	if len(lines) != 2 {
		t.Fatalf("lines %v", lines)
	}
	first, second := lines[0], lines[1]
	if first["uri"] != "/orders?id=7" || first["status"] != "200" || first["method"] != "GET" || first["route"] != "orders" ||
		first["client"] != "127.0.0.1" || first["user_agent"] != "demo" || first["details"] != "via_upstream" ||
		first["request_id"] == "" || !strings.HasPrefix(first["upstream"], "127.0.0.1:") || first["time"] == "" {
		t.Fatalf("first line %v", first)
	}
	if second["uri"] != "/status/503" || second["status"] != "503" {
		t.Fatalf("second line %v", second)
	}
	if got := h.Counter(t, "moe_access_log_lines"); got != 2 {
		t.Fatalf("moe_access_log_lines = %d", got)
	}
}

// A file output under load: every line of a burst arrives, none is dropped
// with a queue that fits the burst, and a request's latency does not depend on
// the disk. Stopping the host flushes what is queued.
func TestE2EFileLinesAndFlushOnStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "access.log")
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: []hosttest.Plugin{{Name: "access-log", Config: map[string]any{
		"path": path, "format": "$method $request_uri $status", "queue_size": 1000,
	}}}})
	const n = 200
	for i := 0; i < n; i++ {
		if resp, _ := hosttest.Get(t, h.URL+"/burst"); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	read := func() []string {
		b, _ := os.ReadFile(path)
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	tb.Eventually(t, "200 lines in the file", func() bool { return len(read()) == n })
	if l := read()[0]; l != "GET /burst 200" {
		t.Fatalf("line %q", l)
	}
	if d := h.Counter(t, "moe_access_log_dropped"); d != 0 {
		t.Fatalf("dropped %d", d)
	}
	// One more request, then a graceful stop: its line is in the file.
	hosttest.Get(t, h.URL+"/last")
	if err := h.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := h.WaitExit(t, 10*time.Second); err != nil {
		t.Logf("exit: %v", err)
	}
	lines := read()
	if len(lines) != n+1 || lines[n] != "GET /last 200" {
		t.Fatalf("after stop: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}
