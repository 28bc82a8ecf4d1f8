package hostbalance_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

func suffix(port int) string { return "127_0_0_1_" + strconv.Itoa(port) }

// The documented example with three echo upstreams in place of 9001-9003:
// every answer's x-upstream proves where the request went.
func TestE2EExample(t *testing.T) {
	a, b, c := echo.Start(t, "a"), echo.Start(t, "b"), echo.Start(t, "c")
	h := hosttest.StartExample(t, "envoy/examples/host-balance.yaml", hosttest.ExampleOptions{Replace: map[string]string{
		"9001": strconv.Itoa(a.Port), "9002": strconv.Itoa(b.Port), "9003": strconv.Itoa(c.Port),
	}})
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string, kv ...string) string {
		t.Helper()
		code, hdr, body := hosttest.Fetch(t, client, h.URL+path, kv...)
		if code != 200 {
			t.Fatalf("%s: %d %q", path, code, body)
		}
		return hdr.Get("x-upstream")
	}

	// Round robin: each host in turn.
	var seq []string
	for i := 0; i < 6; i++ {
		seq = append(seq, get("/rr"))
	}
	for i := 0; i < 3; i++ {
		if seq[i] != seq[i+3] || seq[i] == seq[(i+1)%3] {
			t.Fatalf("/rr went to %v, want a cycle over a, b, c", seq)
		}
	}
	// Consistent hash: a user stays on one host; users spread.
	spread := map[string]bool{}
	for u := 0; u < 12; u++ {
		user := fmt.Sprintf("user-%d", u)
		first := get("/user", "x-user", user)
		for i := 0; i < 2; i++ {
			if got := get("/user", "x-user", user); got != first {
				t.Fatalf("%s went to %s, then %s", user, first, got)
			}
		}
		spread[first] = true
	}
	if len(spread) < 2 {
		t.Fatalf("12 users all on %v", spread)
	}
	// Peak EWMA: all three hosts are in play.
	ewma := map[string]int{}
	for i := 0; i < 30; i++ {
		ewma[get("/ewma")]++
	}
	if len(ewma) < 2 {
		t.Fatalf("/ewma: %v", ewma)
	}
	// DNS: localhost's hosts, port of a.
	if got := get("/dns"); got != "a" {
		t.Fatalf("/dns went to %s", got)
	}
	// Another cluster: the plugin steps aside, Envoy balances.
	if got := get("/other"); got != "upstream" {
		t.Fatalf("/other went to %s", got)
	}
	// Round robin alone sent each host two requests; how many more a host got
	// from the hash (12 users over the ports of this run) and from peak EWMA
	// (latencies under load) varies, so that is all a host's count must show.
	for _, m := range []struct {
		name string
		min  int64
	}{
		{"moe_host_balance_picked_" + suffix(a.Port), 2}, {"moe_host_balance_picked_" + suffix(b.Port), 2},
		{"moe_host_balance_picked_" + suffix(c.Port), 2}, {"moe_host_balance_skipped_other_cluster", 1},
		{"moe_host_balance_dns_resolutions", 1},
	} {
		if got := h.Counter(t, m.name); got < m.min {
			t.Errorf("%s = %d, want >= %d", m.name, got, m.min)
		}
	}
	if got := h.Counter(t, "moe_host_balance_override_missed"); got != 0 {
		t.Errorf("override_missed = %d: moe-host did not honour a pin", got)
	}
}

// outlierBootstrap: a cluster of the given ports, host-balance round robin
// over hostPorts with 3 failures in a row ejecting for 1s.
const outlierBootstrap = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: {{.AdminPort}}}}
static_resources:
  listeners:
  - name: e2e
    address: {socket_address: {address: 127.0.0.1, port_value: {{.Port}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: e2e
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
                  - name: host-balance
                    config: {hosts: {{.Hosts}}, strict: {{.Strict}}, outlier_detection: {consecutive_failures: 3, base_ejection_time: 1s}}
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          route_config:
            name: e2e
            virtual_hosts:
            - name: e2e
              domains: ["*"]
              routes:
              - match: {prefix: /}
                route: {cluster: backends}
  clusters:
  - name: backends
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: backends
      endpoints:
      - lb_endpoints:
{{- range .Ports}}
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: {{.}}}}}
{{- end}}
`

func startOutlier(t *testing.T, hostPorts, clusterPorts []int, strict bool) *hosttest.Host {
	t.Helper()
	var hosts []string
	for _, p := range hostPorts {
		hosts = append(hosts, fmt.Sprintf(`{address: "127.0.0.1:%d"}`, p))
	}
	return hosttest.Start(t, outlierBootstrap, hosttest.Vars{
		"Hosts": "[" + strings.Join(hosts, ", ") + "]", "Ports": clusterPorts, "Strict": strict,
	})
}

// A host that is down fails its first requests, is ejected after 3 in a row,
// comes back after base_ejection_time and, still down, is ejected again for
// twice as long.
func TestE2EDownHostIsEjectedAndComesBack(t *testing.T) {
	a, b := echo.Start(t, "a"), echo.Start(t, "b")
	down := hosttest.ClosedPort(t)
	ports := []int{a.Port, b.Port, down}
	h := startOutlier(t, ports, ports, false)
	client := &http.Client{Timeout: 5 * time.Second}
	send := func(n int) (ok, failed int) {
		for i := 0; i < n; i++ {
			switch code, hdr, body := hosttest.Fetch(t, client, h.URL+"/"); {
			case code == 200 && (hdr.Get("x-upstream") == "a" || hdr.Get("x-upstream") == "b"):
				ok++
			case code == 503 && strings.Contains(body, "upstream connect error"):
				failed++
			default:
				t.Fatalf("status %d from %q: %q", code, hdr.Get("x-upstream"), body)
			}
		}
		return ok, failed
	}
	start := time.Now()
	// Round robin: every third request goes to the down host until it is ejected.
	if ok, failed := send(30); failed != 3 || ok != 27 {
		t.Fatalf("first 30 requests: %d ok, %d failed; want 27 and 3", ok, failed)
	}
	if got := h.Counter(t, "moe_host_balance_ejections_"+suffix(down)); got != 1 {
		t.Fatalf("ejections of the down host: %d", got)
	}
	if time.Since(start) > 900*time.Millisecond {
		t.Skipf("too slow to check the 1s ejection (%v)", time.Since(start))
	}
	time.Sleep(time.Until(start.Add(1100 * time.Millisecond)))
	// Back after 1s, still down: 3 more failures, ejected again (for 2s).
	if ok, failed := send(30); failed != 3 || ok != 27 {
		t.Fatalf("after the ejection: %d ok, %d failed; want 27 and 3", ok, failed)
	}
	if got := h.Counter(t, "moe_host_balance_ejections_"+suffix(down)); got != 2 {
		t.Fatalf("ejections of the down host: %d", got)
	}
	if got := h.Counter(t, "moe_host_balance_failures_"+suffix(down)); got != 6 {
		t.Fatalf("failures of the down host: %d", got)
	}
	if a.Requests.Load()+b.Requests.Load() != 54 {
		t.Fatalf("healthy hosts served %d+%d", a.Requests.Load(), b.Requests.Load())
	}
}

// Every host down: once all are ejected, the plugin stops pinning and
// Envoy's own balancing answers (here 503, nothing can be reached).
func TestE2EEveryHostDownFallsBackToEnvoy(t *testing.T) {
	d1, d2 := hosttest.ClosedPort(t), hosttest.ClosedPort(t)
	ports := []int{d1, d2}
	h := startOutlier(t, ports, ports, false)
	client := &http.Client{Timeout: 5 * time.Second}
	for i := 0; i < 10; i++ {
		if code, _, body := hosttest.Fetch(t, client, h.URL+"/"); code != 503 || !strings.Contains(body, "upstream connect error") {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
	}
	// 6 failures eject both; the other 4 requests went to Envoy's balancing.
	if got := h.Counter(t, "moe_host_balance_fallback_all_ejected"); got != 4 {
		t.Fatalf("fallback_all_ejected = %d, want 4", got)
	}
}

// A pinned host Envoy's cluster does not have: non-strict lets Envoy
// balance (counted as override_missed), strict answers 503.
func TestE2EHostOutsideTheCluster(t *testing.T) {
	a := echo.Start(t, "a")
	stray := hosttest.ClosedPort(t)
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprint("strict=", strict), func(t *testing.T) {
			h := startOutlier(t, []int{stray}, []int{a.Port}, strict)
			code, hdr, _ := hosttest.Fetch(t, &http.Client{Timeout: 5 * time.Second}, h.URL+"/")
			if !strict {
				if code != 200 || hdr.Get("x-upstream") != "a" || h.Counter(t, "moe_host_balance_override_missed") != 1 {
					t.Fatalf("non-strict: %d from %q, override_missed %d", code, hdr.Get("x-upstream"), h.Counter(t, "moe_host_balance_override_missed"))
				}
				return
			}
			if code != 503 {
				t.Fatalf("strict: %d from %q", code, hdr.Get("x-upstream"))
			}
		})
	}
}
