package trafficroute_test

import (
	"testing"

	_ "github.com/moeproxy/moe/plugins/template"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// routeTable is the example's route table: the cluster header first, then
// x-unit, then the default.
func routeTable(h map[string][]string) (string, string) {
	if v := h["x-moe-cluster"]; len(v) > 0 {
		return "by-cluster", v[0]
	}
	if v := h["x-unit"]; len(v) > 0 && v[0] == "eu" {
		return "eu-unit", "orders-eu"
	}
	return "default", "orders"
}

const chain = `{"plugins": [
  {"name": "template", "config": {"stamp": "$traffic_target"}},
  {"name": "traffic-route", "config": {
    "rules": [
      {"name": "canary", "match": {"headers": [{"name": "x-canary", "exact": "1"}]}, "cluster": "orders-canary"},
      {"name": "eu", "match": {"query": [{"name": "region", "exact": "eu"}]}, "set_headers": [{"name": "x-unit", "value": "eu"}]}
    ]}}
]}`

// Through the real framework: traffic-route runs BeforeRoute (before the
// template plugin although listed after it), its header change clears the
// route cache once, the route is matched again, and a later plugin reads
// $traffic_target.
func TestChainRoutesAndRematches(t *testing.T) {
	r, err := fakeenvoy.NewChain(chain)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		path           string
		headers        [][2]string
		route, cluster string
		clears         int
		stamp          string
	}{
		{"canary", "/o", [][2]string{{"x-canary", "1"}}, "by-cluster", "orders-canary", 1, "canary"},
		{"header target", "/o?region=eu", nil, "eu-unit", "orders-eu", 1, "eu"},
		{"no target, nothing changed: no re-match", "/o", nil, "default", "orders", 0, ""},
		{"client's cluster header removed: re-match", "/o", [][2]string{{"x-moe-cluster", "orders-eu"}}, "default", "orders", 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Do(fakeenvoy.Request{Path: tc.path, Headers: tc.headers, Router: routeTable})
			if len(res.Violations) > 0 || res.Status != 200 || res.Upstream == nil {
				t.Fatalf("status %d violations %v", res.Status, res.Violations)
			}
			if res.Upstream.Route != tc.route || res.Upstream.Cluster != tc.cluster || res.RouteClears != tc.clears {
				t.Errorf("route %s cluster %s clears %d, want %s %s %d", res.Upstream.Route, res.Upstream.Cluster, res.RouteClears, tc.route, tc.cluster, tc.clears)
			}
			if got := res.Headers["x-moe-template"]; len(got) != 1 || got[0] != tc.stamp {
				t.Errorf("$traffic_target seen by a later plugin: %q, want %q", got, tc.stamp)
			}
			if tc.stamp != "" && res.FilterState["moe.state.traffic_target"] != tc.stamp {
				t.Errorf("filter state %v, want moe.state.traffic_target=%s", res.FilterState, tc.stamp)
			}
		})
	}
}

// BenchmarkChain: a whole request through the moe filter manager on the fake
// Envoy, against the empty chain measured in the same run.
func BenchmarkChain(b *testing.B) {
	canary := [2]string{"x-canary", "1"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), canary)
	})
	// Six rules; the request matches the fourth (a header), then the cluster
	// header is written and the route cache cleared.
	b.Run("traffic-route-6-rules-header-match", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"traffic-route","config":{"rules":[
			{"match":{"path":{"prefix":"/legacy/"}},"cluster":"legacy"},
			{"match":{"cookies":[{"name":"user","prefix":"beta-"}]},"cluster":"beta"},
			{"match":{"query":[{"name":"region","exact":"eu"}]},"set_headers":[{"name":"x-unit","value":"eu"}]},
			{"match":{"headers":[{"name":"x-canary","exact":"1"}]},"cluster":"canary"},
			{"match":{"methods":["POST"]},"cluster":"writes"},
			{"match":{"cel":"request.headers[\"x-user\"].startsWith(\"vip-\")"},"cluster":"vip"}],
			"default":{"cluster":"orders"}}}]}`), canary)
	})
	b.Run("traffic-route-cel-match", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"traffic-route","config":{"rules":[
			{"match":{"cel":"request.headers[\"x-canary\"] == \"1\""},"cluster":"canary"}],
			"default":{"cluster":"orders"}}}]}`), canary)
	})
	b.Run("traffic-route-default-only", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"traffic-route","config":{"default":{"cluster":"orders"}}}]}`), canary)
	})
}
