package all_test

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// The standard chain of the performance issue (limit-req, key-auth,
// consumer-restriction, sentinel, ip-restriction) in one moe filter.
const standardChain = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: {{.AdminPort}}}}
static_resources:
  listeners:
  - name: standard
    address: {socket_address: {address: 127.0.0.1, port_value: {{.Port}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: standard
          http_filters:
          - name: envoy.filters.http.golang
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
              library_id: moe
              library_path: {{.Library}}
              plugin_name: moe
              plugin_config:
                "@type": type.googleapis.com/xds.type.v3.TypedStruct
                value:
                  plugins:
                  - name: limit-req
                    config: {rate: 100000, burst: 100000}
                  - name: key-auth
                    config:
                      sources: ["header:x-api-key"]
                      consumers:
                      - {name: alice, keys: ["alice-secret-key"]}
                  - name: consumer-restriction
                    config:
                      rules:
                      - {consumers: [alice]}
                  - name: sentinel
                    config:
                      resource: "$route_name"
                      flow:
                      - threshold: 1000000
                  - name: ip-restriction
                    config:
                      allow: ["127.0.0.0/8", "::1"]
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          route_config:
            name: standard
            virtual_hosts:
            - name: standard
              domains: ["*"]
              routes:
              - name: all
                match: {prefix: /}
                route: {cluster: upstream}
  clusters:
  - name: upstream
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: upstream
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: {{.UpstreamPort}}}}}
`

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
	h := hosttest.Start(t, standardChain, hosttest.Vars{"UpstreamPort": hosttest.EchoUpstream(t)},
		hosttest.Options{Env: []string{metrics.FlushIntervalEnv + "=1h"}})
	send := func(n int) {
		for range n {
			resp, body := hosttest.Send(t, "GET", h.URL+"/x", "", "x-api-key", "alice-secret-key")
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
