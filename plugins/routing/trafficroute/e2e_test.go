package trafficroute_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// The documented example through moe-host and the real libgolang.so, with
// three real upstreams (orders on the example's :8080, canary and eu) and a
// closed port for the archive cluster: each request's x-upstream and the
// host's per-cluster counters prove where it went.
func TestE2EExample(t *testing.T) {
	canary, eu := echo.Start(t, "canary"), echo.Start(t, "eu")
	h := hosttest.StartExample(t, "envoy/examples/traffic-route.yaml", hosttest.ExampleOptions{Replace: map[string]string{
		"port_value: 9002": "port_value: " + strconv.Itoa(canary.Port),
		"port_value: 9003": "port_value: " + strconv.Itoa(eu.Port),
		"port_value: 9009": "port_value: " + strconv.Itoa(hosttest.ClosedPort(t)),
	}})
	get := func(method, path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		return hosttest.Send(t, method, h.URL+path, "", hdr...)
	}
	for _, tc := range []struct {
		name, method, path string
		hdr                []string
		upstream           string
		cluster            string // x-moe-cluster the upstream saw ("" = none)
	}{
		{"default", "GET", "/orders", nil, "upstream", "orders"},
		{"header rule", "GET", "/orders", []string{"x-canary", "1"}, "canary", "orders-canary"},
		{"cookie rule", "GET", "/orders", []string{"cookie", "a=1; user=beta-7"}, "canary", "orders-canary"},
		{"malformed cookie: default", "GET", "/orders", []string{"cookie", "user;beta-7=="}, "upstream", "orders"},
		{"header target, route re-matched", "GET", "/orders?region=eu", nil, "eu", ""},
		{"cel rule", "POST", "/orders", []string{"x-batch", "1"}, "canary", "orders-canary"},
		{"client's cluster header removed", "GET", "/orders", []string{"x-moe-cluster", "orders-eu"}, "upstream", "orders"},
		{"client's repeated cluster headers removed", "GET", "/orders", []string{"x-moe-cluster", "orders-eu", "x-moe-cluster", "orders-canary"}, "upstream", "orders"},
		{"client's x-unit is the route table's business", "GET", "/orders", []string{"x-unit", "eu"}, "upstream", "orders"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := get(tc.method, tc.path, tc.hdr...)
			if resp.StatusCode != 200 || resp.Header.Get("x-upstream") != tc.upstream {
				t.Fatalf("status %d from %q, want 200 from %q", resp.StatusCode, resp.Header.Get("x-upstream"), tc.upstream)
			}
			resp, _ = get(tc.method, tc.path, tc.hdr...)
			e := hosttest.DecodeEcho(t, resp)
			if got := e.Values("x-moe-cluster"); strings.Join(got, ",") != tc.cluster {
				t.Errorf("upstream saw x-moe-cluster %q, want %q", got, tc.cluster)
			}
		})
	}

	// A cluster target the route table does not have: Envoy's router answers 503
	// with an empty body (flag NC); nothing reaches an upstream.
	before := h.Stats(t)
	resp, body := get("GET", "/legacy/x")
	if resp.StatusCode != 503 || body != "" || resp.Header.Get("x-upstream") != "" {
		t.Fatalf("missing cluster: %d %q from %q, want 503, empty body, no upstream", resp.StatusCode, body, resp.Header.Get("x-upstream"))
	}
	// Every endpoint of the target down: the router's 503, no fallback to another cluster.
	resp, body = get("GET", "/archive/x")
	if resp.StatusCode != 503 || !strings.Contains(body, "upstream connect error") {
		t.Fatalf("down cluster: %d %q, want 503 upstream connect error", resp.StatusCode, body)
	}
	after := h.Stats(t)
	for _, c := range []string{"orders", "orders-canary", "orders-eu", "orders-archive"} {
		k := "cluster." + c + ".upstream_rq_total"
		if after[k] != before[k] {
			t.Errorf("%s went from %s to %s: a refused request reached an upstream", k, before[k], after[k])
		}
	}
	if got := after["cluster.orders-archive.upstream_cx_connect_fail"]; got != "1" {
		t.Errorf("orders-archive connect failures %q, want 1", got)
	}

	// A huge header is refused by the codec (431) before any plugin runs.
	resp, _ = get("GET", "/orders", "x-canary", strings.Repeat("1", 70<<10))
	if resp.StatusCode != 431 {
		t.Fatalf("70 KiB header: %d, want 431", resp.StatusCode)
	}

	for name, want := range map[string]int64{
		// default: default, malformed cookie, client header x2, x-unit, each twice
		"moe_traffic_route_target_orders":         10,
		"moe_traffic_route_target_canary":         2,
		"moe_traffic_route_target_beta_users":     2,
		"moe_traffic_route_target_eu":             2,
		"moe_traffic_route_target_bulk":           2,
		"moe_traffic_route_target_orders_legacy":  1,
		"moe_traffic_route_target_orders_archive": 1,
		"moe_traffic_route_client_header_removed": 4,
		"moe_traffic_route_target_missing":        1,
		"moe_traffic_route_no_target":             0,
	} {
		if got := h.Counter(t, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if canary.Requests.Load() != 6 || eu.Requests.Load() != 2 {
		t.Errorf("canary got %d requests, eu %d; want 6 and 2", canary.Requests.Load(), eu.Requests.Load())
	}
}

// The chosen target is a variable for later plugins: the template plugin
// stamps $traffic_target on the response, across two golang filters too
// (state travels in Envoy's filter state, moe.state.traffic_target).
func TestE2ETargetVariableForLaterPlugins(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: []hosttest.Plugin{
		{Name: "template", Config: map[string]any{"stamp": "$traffic_target/$header_x-moe-cluster"}},
		{Name: "traffic-route", Config: map[string]any{
			"rules":   []any{map[string]any{"name": "canary", "match": map[string]any{"headers": []any{map[string]any{"name": "x-canary"}}}, "cluster": "upstream"}},
			"default": map[string]any{"name": "main", "cluster": "upstream"},
		}},
	}})
	resp, _ := hosttest.Get(t, h.URL+"/", "x-canary", "1")
	if resp.StatusCode != 200 || resp.Header.Get("x-moe-template") != "canary/upstream" {
		t.Fatalf("%d x-moe-template %q, want canary/upstream", resp.StatusCode, resp.Header.Get("x-moe-template"))
	}
	resp, _ = hosttest.Get(t, h.URL+"/")
	if resp.Header.Get("x-moe-template") != "main/upstream" {
		t.Fatalf("x-moe-template %q, want main/upstream", resp.Header.Get("x-moe-template"))
	}
}
