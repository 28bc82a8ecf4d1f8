package stressroute_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

func startExample(t *testing.T, shadow, payments int, replace map[string]string) *hosttest.Host {
	t.Helper()
	r := map[string]string{
		"port_value: 9002": "port_value: " + strconv.Itoa(shadow),
		"port_value: 9003": "port_value: " + strconv.Itoa(payments),
	}
	for k, v := range replace {
		r[k] = v
	}
	return hosttest.StartExample(t, "envoy/examples/stress-route.yaml", hosttest.ExampleOptions{Replace: r})
}

// The documented example through moe-host with real upstreams: marked
// requests reach only the shadow cluster (or are refused), unmarked ones only
// production, whatever the client sends; the host's per-cluster request
// counters prove it.
func TestE2EExample(t *testing.T) {
	shadow, payments := echo.Start(t, "orders-shadow"), echo.Start(t, "payments")
	// sentinel's limit for test traffic is the subject of the next test.
	h := startExample(t, shadow.Port, payments.Port, map[string]string{"flow: [{threshold: 3}]": "flow: [{threshold: 100000}]"})
	mark := []string{"x-pressure-test", "true"}
	type result struct {
		status   int
		upstream string
		echoed   *hosttest.Echoed
	}
	do := func(path string, hdr ...string) result {
		t.Helper()
		resp, body := hosttest.Get(t, h.URL+path, hdr...)
		r := result{status: resp.StatusCode, upstream: resp.Header.Get("x-upstream")}
		if r.upstream != "" {
			resp2, _ := hosttest.Get(t, h.URL+path, hdr...)
			e := hosttest.DecodeEcho(t, resp2)
			r.echoed = &e
		} else if r.status == 200 {
			t.Fatalf("%s: 200 without an upstream: %q", path, body)
		}
		return r
	}
	rq := func() map[string]int64 {
		st := h.Stats(t)
		out := map[string]int64{}
		for _, c := range []string{"orders", "inventory", "orders-shadow", "payments"} {
			out[c], _ = strconv.ParseInt(st["cluster."+c+".upstream_rq_total"], 10, 64)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		path     string
		hdr      []string
		status   int
		upstream string
		cluster  string // upstream_rq_total +2 (each case sends twice when answered)
	}{
		{"unmarked to production", "/orders", nil, 200, "upstream", "orders"},
		{"marked to the shadow", "/orders", mark, 200, "orders-shadow", "orders-shadow"},
		{"marked, a repeated mark", "/orders", []string{"x-pressure-test", "true", "x-pressure-test", "true"}, 200, "orders-shadow", "orders-shadow"},
		{"unmarked, traffic-route target", "/payments/1", nil, 200, "payments", "payments"},
		{"marked, traffic-route target whose shadow is missing", "/payments/1", mark, 503, "", ""},
		{"marked, static route target whose shadow is missing", "/inventory/1", mark, 503, "", ""},
		{"unmarked, static route", "/inventory/1", nil, 200, "upstream", "inventory"},
		{"unmarked, the client names a shadow", "/orders", []string{"x-moe-cluster", "orders-shadow"}, 403, "", ""},
		{"unmarked, a route to a shadow", "/shadow-admin/x", nil, 403, "", ""},
		{"marked, a route to a shadow", "/shadow-admin/x", mark, 200, "orders-shadow", "orders-shadow"},
		{"a mark with another value is no mark, and removed", "/orders", []string{"x-pressure-test", "1"}, 200, "upstream", "orders"},
		{"marked, the client names production", "/orders", []string{"x-pressure-test", "true", "x-moe-cluster", "payments"}, 503, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := rq()
			r := do(tc.path, tc.hdr...)
			after := rq()
			if r.status != tc.status || r.upstream != tc.upstream {
				t.Fatalf("%d from %q, want %d from %q", r.status, r.upstream, tc.status, tc.upstream)
			}
			for c := range after {
				want := int64(0)
				if c == tc.cluster {
					want = 2
				}
				if d := after[c] - before[c]; d != want {
					t.Errorf("cluster %s got %d requests, want %d", c, d, want)
				}
			}
			if r.echoed == nil {
				return
			}
			marked := tc.cluster == "orders-shadow"
			if got := r.echoed.Values("x-pressure-test"); marked != (len(got) == 1 && got[0] == "true") || (!marked && len(got) != 0) {
				t.Errorf("upstream saw x-pressure-test %q (marked %v)", got, marked)
			}
		})
	}
	if got := payments.Requests.Load(); got != 2 {
		t.Errorf("payments served %d requests, want 2 (unmarked only)", got)
	}
	for name, want := range map[string]int64{
		"moe_stress_route_marked":         9,
		"moe_stress_route_shadow_missing": 3,
		// /payments/1 marked, and /orders marked with x-moe-cluster: payments
		// (traffic-route removes the client's header, but the route stress-route
		// reads was matched on it: the shadow of payments, still a shadow).
		"moe_stress_route_shadow_payments_stress": 2,
		"moe_stress_route_unmarked_refused":       2,
		"moe_stress_route_mark_header_removed":    2,
	} {
		if got := h.Counter(t, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// Every endpoint of the shadow down: Envoy's 503, and the request is not sent
// to production instead.
func TestE2EShadowDown(t *testing.T) {
	payments := echo.Start(t, "payments")
	h := startExample(t, hosttest.ClosedPort(t), payments.Port, nil)
	resp, body := hosttest.Get(t, h.URL+"/orders", "x-pressure-test", "true")
	if resp.StatusCode != 503 || !strings.Contains(body, "upstream connect error") {
		t.Fatalf("%d %q, want 503 upstream connect error", resp.StatusCode, body)
	}
	if n := h.Counter(t, "cluster.orders.upstream_rq_total"); n != 0 {
		t.Fatalf("production got %d requests", n)
	}
}

// sentinel agrees with stress-route by keying on $stress: test traffic has
// its own limit (3 qps) and production traffic is not limited by it.
func TestE2ESentinelKeysOnStress(t *testing.T) {
	h := startExample(t, echo.Start(t, "orders-shadow").Port, echo.Start(t, "payments").Port, nil)
	var codes []string
	for i := 0; i < 5; i++ {
		resp, _ := hosttest.Get(t, h.URL+"/orders", "x-pressure-test", "true")
		codes = append(codes, strconv.Itoa(resp.StatusCode))
	}
	if got := strings.Join(codes, " "); got != "200 200 200 429 429" {
		t.Fatalf("marked: %s, want 200 x3 then 429", got)
	}
	for i := 0; i < 5; i++ {
		if resp, _ := hosttest.Get(t, h.URL+"/orders"); resp.StatusCode != http.StatusOK {
			t.Fatalf("unmarked request %d: %d", i, resp.StatusCode)
		}
	}
}
