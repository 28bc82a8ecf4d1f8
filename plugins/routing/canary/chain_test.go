package canary_test

import (
	"testing"

	// key-auth identifies the consumer in TestChainKeyedByConsumer.
	_ "github.com/moeproxy/moe/plugins/auth/keyauth"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

const exampleConfig = `{
  "keys": ["$header_x-user-id", "$cookie_uid"],
  "cluster_header": "x-moe-cluster",
  "response_header": "x-canary-target",
  "override": {"header": "x-canary", "cookie": "canary"},
  "cookie": {"name": "moe_canary", "max_age": "24h", "http_only": true, "same_site": "Lax"},
  "targets": [{"name": "stable", "cluster": "svc-v1", "weight": 90}, {"name": "canary", "cluster": "svc-v2", "weight": 10}]
}`

// router is the example's route table: route "app" with cluster_header.
func router(h map[string][]string) (string, string) {
	if v := h["x-moe-cluster"]; len(v) > 0 {
		return "app", v[0]
	}
	return "app", ""
}

// In the real framework over a fake Envoy: the header write reaches Envoy
// before the route is matched again, the route cache is cleared once, the
// response carries the target and the pinning cookie, and the access log
// can read the target from filter state.
func TestChainSteersThroughTheRouteTable(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("canary", exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ user, cluster, target string }{{"user-1", "svc-v1", "stable"}, {"user-28", "svc-v2", "canary"}} {
		res := r.Do(fakeenvoy.Request{Headers: [][2]string{{"x-user-id", tc.user}, {"x-moe-cluster", "spoofed"}}, Router: router})
		if len(res.Violations) > 0 {
			t.Fatal(res.Violations)
		}
		if res.Upstream == nil || res.Upstream.Cluster != tc.cluster || res.RouteClears != 1 {
			t.Fatalf("%s: upstream %+v, route clears %d", tc.user, res.Upstream, res.RouteClears)
		}
		if res.Headers["x-canary-target"][0] != tc.target || len(res.Headers["set-cookie"]) != 1 {
			t.Fatalf("%s: response headers %v", tc.user, res.Headers)
		}
		if got := res.FilterState["moe.state.canary_target"]; got != tc.target {
			t.Fatalf("%s: filter state %v", tc.user, res.FilterState)
		}
	}
}

// BenchmarkChain: a whole request through the moe filter manager on the
// fake Envoy, against the empty chain measured in the same run.
func BenchmarkChain(b *testing.B) {
	user := [2]string{"x-user-id", "user-28"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), user)
	})
	b.Run("canary-key-2-targets", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"canary","config":{"keys":["$header_x-user-id"],
		  "targets":[{"name":"stable","cluster":"svc-v1","weight":90},{"name":"canary","cluster":"svc-v2","weight":10}]}}]}`), user)
	})
	b.Run("canary-example-cookie-and-response-header", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"canary","config":`+exampleConfig+`}]}`), user)
	})
	b.Run("canary-key-5-targets", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"canary","config":{"keys":["$header_x-user-id"],
		  "targets":[{"name":"a","cluster":"a","weight":60},{"name":"b","cluster":"b","weight":10},{"name":"c","cluster":"c","weight":10},{"name":"d","cluster":"d","weight":10},{"name":"e","cluster":"e","weight":10}]}}]}`), user)
	})
}

// Keyed by $consumer: after key-auth identified the caller, in the same
// phase, the split is per consumer (why the plugin is AfterRoute).
func TestChainKeyedByConsumer(t *testing.T) {
	r, err := fakeenvoy.NewChain(`{"plugins":[
	  {"name":"key-auth","config":{"sources":["header:x-api-key"],"consumers":[
	    {"name":"alice","keys":["alice-key-0123456789"]},{"name":"bob","keys":["bob-key-01234567890"]}]}},
	  {"name":"canary","config":{"keys":["$consumer"],"targets":[{"name":"stable","cluster":"svc-v1","weight":50},{"name":"canary","cluster":"svc-v2","weight":50}]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for i := 0; i < 10; i++ {
		for _, k := range []string{"alice-key-0123456789", "bob-key-01234567890"} {
			res := r.Do(fakeenvoy.Request{Headers: [][2]string{{"x-api-key", k}}, Router: router})
			if len(res.Violations) > 0 || res.Upstream == nil {
				t.Fatalf("%v %+v", res.Violations, res)
			}
			if prev, ok := seen[k]; ok && prev != res.Upstream.Cluster {
				t.Fatalf("consumer of %s moved %s -> %s", k, prev, res.Upstream.Cluster)
			}
			seen[k] = res.Upstream.Cluster
		}
	}
	if n := fakeenvoy.Stats.Counter("moe_canary_by_key"); n < 20 {
		t.Fatalf("by_key = %d: the consumer was not the key", n)
	}
}
