package stressroute_test

import (
	"strings"
	"testing"

	_ "github.com/moeproxy/moe/plugins/routing/trafficroute"
	_ "github.com/moeproxy/moe/plugins/template"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// routeTable is the example's route table.
func routeTable(h map[string][]string) (string, string) {
	if v := h["x-moe-cluster"]; len(v) > 0 {
		return "by-cluster", v[0]
	}
	p := h[":path"][0]
	switch {
	case strings.HasPrefix(p, "/shadow-admin/"):
		return "shadow-admin", "orders-shadow"
	case strings.HasPrefix(p, "/inventory/"):
		return "inventory", "inventory"
	}
	return "orders", "orders"
}

const chain = `{"plugins": [
  {"name": "template", "config": {"stamp": "$stress/$stress_cluster"}},
  {"name": "traffic-route", "config": {"rules": [{"match": {"path": {"prefix": "/payments/"}}, "cluster": "payments"}]}},
  {"name": "stress-route", "config": {
    "match": {"headers": [{"name": "x-pressure-test", "exact": "true"}]},
    "shadow": {"suffix": "-shadow", "clusters": {"payments": "payments-stress"}}}}
]}`

// Through the real framework, after traffic-route: where each request is
// routed once the route cache was cleared, and what a later plugin reads.
func TestChainWithTrafficRoute(t *testing.T) {
	r, err := fakeenvoy.NewChain(chain)
	if err != nil {
		t.Fatal(err)
	}
	mark := [2]string{"x-pressure-test", "true"}
	for _, tc := range []struct {
		name    string
		path    string
		headers [][2]string
		status  int
		cluster string
		stamp   string
	}{
		{"marked, route target", "/orders", [][2]string{mark}, 200, "orders-shadow", "true/orders-shadow"},
		{"marked, traffic-route target", "/payments/1", [][2]string{mark}, 200, "payments-stress", "true/payments-stress"},
		{"marked, static route target", "/inventory/1", [][2]string{mark}, 200, "inventory-shadow", "true/inventory-shadow"},
		{"unmarked", "/orders", nil, 200, "orders", "/"},
		{"unmarked, traffic-route target", "/payments/1", nil, 200, "payments", "/"},
		// traffic-route removed the client's header, so stress-route sees no
		// cluster header, and the route matched on the request as it came
		// (by the client's header) leads to a shadow: refused. Without
		// traffic-route, stress-route removes the header itself and the
		// request goes to production (filter_test.go).
		{"unmarked, client names a shadow", "/orders", [][2]string{{"x-moe-cluster", "orders-shadow"}}, 403, "", "/"},
		{"unmarked, route to a shadow", "/shadow-admin/x", nil, 403, "", "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Do(fakeenvoy.Request{Path: tc.path, Headers: tc.headers, Router: routeTable})
			if len(res.Violations) > 0 || res.Status != tc.status {
				t.Fatalf("status %d violations %v", res.Status, res.Violations)
			}
			if got := res.Headers["x-moe-template"]; len(got) != 1 || got[0] != tc.stamp {
				t.Errorf("later plugin read %q, want %q", got, tc.stamp)
			}
			if tc.status != 200 {
				if res.Upstream != nil {
					t.Fatalf("refused request reached %s", res.Upstream.Cluster)
				}
				return
			}
			if res.Upstream.Cluster != tc.cluster {
				t.Errorf("cluster %s, want %s", res.Upstream.Cluster, tc.cluster)
			}
			marked := tc.stamp != "/"
			if got := res.Upstream.Headers["x-pressure-test"]; marked != (len(got) == 1 && got[0] == "true") {
				t.Errorf("upstream saw x-pressure-test %q (marked %v)", got, marked)
			}
			if marked && res.FilterState["moe.state.stress"] != "true" {
				t.Errorf("filter state %v", res.FilterState)
			}
		})
	}
}

// Listed before traffic-route, stress-route sends marked traffic to the
// shadow of the route's cluster, and traffic-route then replaces the header
// with its production cluster: why the README says "after traffic-route".
func TestChainOrderMatters(t *testing.T) {
	r, err := fakeenvoy.NewChain(`{"plugins": [
	  {"name": "stress-route", "config": {"match": {"headers": [{"name": "x-pressure-test", "exact": "true"}]}}},
	  {"name": "traffic-route", "config": {"default": {"cluster": "orders"}}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Do(fakeenvoy.Request{Path: "/", Headers: [][2]string{{"x-pressure-test", "true"}}, Router: routeTable})
	if res.Upstream == nil || res.Upstream.Cluster != "orders" {
		t.Fatalf("misordered chain: %+v", res.Upstream)
	}
}

func BenchmarkChain(b *testing.B) {
	mark := [2]string{"x-pressure-test", "true"}
	cfg := `{"plugins":[{"name":"stress-route","config":{"match":{"headers":[{"name":"x-pressure-test","exact":"true"}]},"shadow":{"suffix":"-shadow"}}}]}`
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), mark)
	})
	b.Run("stress-route-marked", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, cfg), mark)
	})
	b.Run("stress-route-unmarked", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, cfg), [2]string{"x-other", "1"})
	})
}
