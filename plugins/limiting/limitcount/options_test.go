package limitcount

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/testing/redistest"
)

func TestRedisPassword(t *testing.T) {
	logMark := fakeenvoy.MarkLogs()
	r := startRedis(t, "--requirepass", "secret-pw")
	run := runner(t, cfgFor(r, map[string]any{"failure_policy": "fail_closed", "redis": map[string]any{"password": "secret-pw"}}))
	if res := do(t, run); res.Status != 200 || hdr(res, "x-ratelimit-remaining") != "2" {
		t.Fatalf("with the password: %d %v", res.Status, res.Headers)
	}
	wrong := runner(t, cfgFor(r, map[string]any{"failure_policy": "fail_closed", "redis": map[string]any{"password": "wrong-pw"}}))
	res := do(t, wrong)
	if res.Status != 503 {
		t.Fatalf("with a wrong password: %d, want 503 (fail_closed)", res.Status)
	}
	for _, line := range fakeenvoy.LogsSince(logMark, "") {
		if strings.Contains(line, "secret-pw") || strings.Contains(line, "wrong-pw") {
			t.Errorf("a log line shows the password: %s", line)
		}
	}
	if strings.Contains(res.Body, "pw") {
		t.Errorf("reply shows the password: %q", res.Body)
	}
}

// TestRedisCluster runs against a one-node Redis Cluster holding every slot:
// the cluster client, slot routing and the hash-tagged keys.
func TestRedisCluster(t *testing.T) {
	r := redistest.StartCluster(t)
	for _, window := range []string{"fixed", "sliding"} {
		run := runner(t, cfgFor(r, map[string]any{"count": 2, "time_window": "10s", "window": window, "key": "$header_x-user",
			"failure_policy": "fail_closed", "redis": map[string]any{"cluster": true}}))
		codes := []int{do(t, run, "x-user", "a").Status, do(t, run, "x-user", "a").Status, do(t, run, "x-user", "a").Status}
		if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
			t.Errorf("%s window in cluster mode: %v, want 200 200 429", window, codes)
		}
	}
}

func TestRedisTLS(t *testing.T) {
	r, tlsAddr, ca := redistest.StartTLS(t)
	run := runner(t, cfgFor(r, map[string]any{"failure_policy": "fail_closed",
		"redis": map[string]any{"addrs": []string{tlsAddr}, "tls": map[string]any{"ca_file": ca, "server_name": "localhost"}}}))
	if res := do(t, run); res.Status != 200 || hdr(res, "x-ratelimit-remaining") != "2" {
		t.Fatalf("over TLS: %d %v", res.Status, res.Headers)
	}
	// A server certificate that does not verify: the call fails (fail_closed).
	bad := runner(t, cfgFor(r, map[string]any{"failure_policy": "fail_closed",
		"redis": map[string]any{"addrs": []string{tlsAddr}, "tls": map[string]any{"server_name": "localhost"}}}))
	if res := do(t, bad); res.Status != 503 {
		t.Fatalf("TLS with an unknown CA: %d, want 503", res.Status)
	}
}
