package rewrite_test

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

func routeTable(h map[string][]string) (string, string) {
	if strings.HasPrefix(h[":path"][0], "/v1/") {
		return "v1", "v1"
	}
	return "default", "orders"
}

// BeforeRoute, Envoy matches the route on the rewritten path; AfterRoute the
// route chosen on the original path stays (the upstream still gets the new
// path), as with Envoy's own prefix_rewrite.
func TestChainPhase(t *testing.T) {
	for _, tc := range []struct {
		phase          string
		route, cluster string
		clears         int
	}{
		{"before_route", "v1", "v1", 1},
		{"after_route", "default", "orders", 0},
	} {
		t.Run(tc.phase, func(t *testing.T) {
			r, err := fakeenvoy.NewPlugin("rewrite", `{"phase": "`+tc.phase+`", "path": {"prefix": "/api/v1/", "replacement": "/v1/"}}`)
			if err != nil {
				t.Fatal(err)
			}
			res := r.Do(fakeenvoy.Request{Path: "/api/v1/x?a=1", Router: routeTable})
			if len(res.Violations) > 0 || res.Status != 200 {
				t.Fatalf("status %d violations %v", res.Status, res.Violations)
			}
			u := res.Upstream
			if u.Route != tc.route || u.Cluster != tc.cluster || res.RouteClears != tc.clears || u.Headers[":path"][0] != "/v1/x?a=1" {
				t.Errorf("route %s cluster %s clears %d path %v", u.Route, u.Cluster, res.RouteClears, u.Headers[":path"])
			}
			if got := u.Headers["x-envoy-original-path"]; len(got) != 1 || got[0] != "/api/v1/x?a=1" {
				t.Errorf("x-envoy-original-path %q", got)
			}
			// Nothing to rewrite: no header write, no re-match.
			res = r.Do(fakeenvoy.Request{Path: "/other", Router: routeTable})
			if res.RouteClears != 0 || res.HeaderWrites != 0 {
				t.Errorf("untouched request: %d clears, %d writes", res.RouteClears, res.HeaderWrites)
			}
		})
	}
}

func BenchmarkChain(b *testing.B) {
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`))
	})
	// The bench request's path is "/": a prefix rewrite of "/" to "/v1/".
	b.Run("rewrite-prefix", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"rewrite","config":{"path":{"prefix":"/","replacement":"/v1/"}}}]}`))
	})
	b.Run("rewrite-regex-host-query", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"rewrite","config":{"phase":"before_route",
			"path":{"regex":"^/(.*)$","replacement":"/svc/\\1"},"host":"backend.internal",
			"query":{"remove":["debug"],"set":[{"name":"source","value":"gw"}]}}}]}`))
	})
	b.Run("rewrite-no-match", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"rewrite","config":{"path":{"prefix":"/api/","replacement":"/"}}}]}`))
	})
}
