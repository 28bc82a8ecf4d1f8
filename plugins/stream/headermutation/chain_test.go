package headermutation_test

import (
	"reflect"
	"testing"

	_ "github.com/moeproxy/moe/plugins/stream/fault" // a plugin that replies locally
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Through the real framework over a fake Envoy: what the upstream and the
// client receive, local replies included.
func TestChain(t *testing.T) {
	r, err := fakeenvoy.NewChain(`{"plugins":[
		{"name":"header-mutation","config":{
			"request":[
				{"op":"remove","name":"x-user"},
				{"op":"set","name":"x-user","value":"$arg_user"},
				{"op":"append","name":"x-via","value":"moe"},
				{"op":"set","name":"x-route","value":"$route_name"}],
			"response":[
				{"op":"set","name":"x-served-by","value":"moe"},
				{"op":"set","name":"cache-control","value":"no-store","when":"response.code >= 400"}]}},
		{"name":"fault","config":{"match":{"path":{"prefix":"/down"}},"abort":{"status":503,"body":"down\n"}}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Do(fakeenvoy.Request{Path: "/p?user=alice%0d%0ax-admin:%201", RouteName: "orders",
		Headers: [][2]string{{"x-user", "spoofed"}, {"x-via", "edge"}}})
	if len(res.Violations) > 0 || res.Upstream == nil {
		t.Fatalf("violations %v upstream %v", res.Violations, res.Upstream)
	}
	up := res.Upstream.Headers
	for k, want := range map[string][]string{
		"x-user":  {"alice  x-admin: 1"},
		"x-via":   {"edge", "moe"},
		"x-route": {"orders"},
	} {
		if !reflect.DeepEqual(up[k], want) {
			t.Errorf("upstream %s = %q, want %q", k, up[k], want)
		}
	}
	if _, ok := up["x-admin"]; ok {
		t.Errorf("a header was injected: %v", up)
	}
	if res.Headers["x-served-by"][0] != "moe" || res.Headers["cache-control"] != nil {
		t.Errorf("response headers %v", res.Headers)
	}
	// The local reply of a later plugin goes through the response mutations.
	res = r.Do(fakeenvoy.Request{Path: "/down"})
	if res.Status != 503 || res.Headers["x-served-by"][0] != "moe" || res.Headers["cache-control"][0] != "no-store" || len(res.Violations) > 0 {
		t.Errorf("local reply: %d %v %v", res.Status, res.Headers, res.Violations)
	}
}

// before_route: the route is matched again on the mutated headers.
func TestChainBeforeRoute(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("header-mutation", `{"phase":"before_route","request":[
		{"op":"set","name":"x-version","value":"v2","when":"request.cookies['beta'] == 'yes'"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	router := func(h map[string][]string) (string, string) {
		if v := h["x-version"]; len(v) > 0 && v[0] == "v2" {
			return "v2", "backend-v2"
		}
		return "v1", "backend-v1"
	}
	res := r.Do(fakeenvoy.Request{Router: router, Headers: [][2]string{{"cookie", "beta=yes"}}})
	if res.Upstream == nil || res.Upstream.Route != "v2" || res.RouteClears != 1 || len(res.Violations) > 0 {
		t.Fatalf("beta: upstream %+v clears %d violations %v", res.Upstream, res.RouteClears, res.Violations)
	}
	res = r.Do(fakeenvoy.Request{Router: router})
	if res.Upstream == nil || res.Upstream.Route != "v1" || res.RouteClears != 0 {
		t.Fatalf("not beta: upstream %+v clears %d", res.Upstream, res.RouteClears)
	}
}

// BenchmarkChain: a headers-only request through the moe filter manager on
// the fake Envoy, against the empty chain measured in the same run.
func BenchmarkChain(b *testing.B) {
	user := [2]string{"x-user", "alice"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), user)
	})
	b.Run("request-3-mutations", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"header-mutation","config":{"request":[
			{"op":"set","name":"x-gateway","value":"moe"},
			{"op":"set","name":"x-route","value":"$route_name"},
			{"op":"remove","name":"x-debug"}]}}]}`), user)
	})
	b.Run("request-template-and-response", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"header-mutation","config":{
			"request":[{"op":"set","name":"x-who","value":"$header_x-user@$route_name"}],
			"response":[{"op":"set","name":"x-served-by","value":"moe"},{"op":"remove","name":"server"}]}}]}`), user)
	})
	b.Run("request-with-cel-condition", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"header-mutation","config":{"request":[
			{"op":"set","name":"x-vip","value":"1","when":"request.headers['x-user'] == 'alice'"}]}}]}`), user)
	})
}
