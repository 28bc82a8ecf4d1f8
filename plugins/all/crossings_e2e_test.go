package all_test

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// crossingBudget is the most C<->Go crossings one request of the standard
// chain may take. Envoy itself makes six (request and response headers, the
// response body, stream complete, log, destroy); the chain adds one copy of
// the request headers, the client address (read once for limit-req and
// ip-restriction), the route name (sentinel's resource), the x-consumer-name
// header sent upstream and the moe.consumer filter state (for later golang
// filters and Envoy's access log). Metric updates are batched (shared/metrics)
// and the response headers are not copied (sentinel has no breakers here).
const crossingBudget = 11

// The host counts every crossing (moe_host.capi.<fn> for C functions Go
// called, moe_host.go.<entry> for Go entry points the host called). A request
// of the standard chain must stay within the budget.
func TestStandardChainCrossingsPerRequest(t *testing.T) {
	// Metric updates reach Envoy in one batch per flush interval: a long one
	// keeps that amortized cost (one crossing per changed metric per
	// interval) out of the per-request count.
	// The standard chain of the performance issue (limit-req, key-auth, consumer-restriction,
	// sentinel, ip-restriction) in one moe filter: make bench's B3.
	h := hosttest.StartExample(t, "envoy/bench/b3-chain.yaml",
		hosttest.ExampleOptions{Host: hosttest.Options{Env: []string{metrics.FlushIntervalEnv + "=1h"}}})
	send := func(n int) {
		for range n {
			resp, body := hosttest.Send(t, "GET", h.URL+"/x", "", "x-api-key", "bench-client-key-0001")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
		}
	}
	send(20) // warm up: config-time calls, first-use metric definitions
	before := crossings(h.Stats(t))
	const n = 200
	send(n)
	after := crossings(h.Stats(t))
	total := 0.0
	var lines []string
	for name, v := range after {
		if d := float64(v-before[name]) / n; d > 0 {
			total += d
			lines = append(lines, name+"="+strconvF(d))
		}
	}
	sort.Strings(lines)
	t.Logf("%.2f crossings per request: %s", total, strings.Join(lines, " "))
	if total > crossingBudget {
		t.Errorf("%.2f crossings per request, budget %d: %s", total, crossingBudget, strings.Join(lines, " "))
	}
}

func crossings(stats map[string]string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range stats {
		if strings.HasPrefix(k, "moe_host.capi.") || strings.HasPrefix(k, "moe_host.go.") {
			out[k] = atoi(v)
		}
	}
	return out
}

func atoi(s string) int64 { n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64); return n }

func strconvF(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }
