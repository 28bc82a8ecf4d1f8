package cel_test

import (
	"testing"

	_ "github.com/moeproxy/moe/plugins/auth/keyauth"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

const chainJSON = `{"plugins":[
	{"name":"key-auth","config":{"sources":["header:x-api-key"]}},
	{"name":"cel","config":{"rules":[
		{"name":"tier","when":"consumer.name != \"\"","set_vars":[{"name":"tier","expr":"consumer.attributes[?\"tier\"].orValue(\"free\")"}],
		 "set_headers":[{"name":"x-tier","value":"$cel_tier"}]},
		{"name":"free-writes","when":"vars[\"cel_tier\"] == \"free\" && request.method != \"GET\"","deny":{"status":402,"body":"upgrade to write\n"}},
		{"name":"canary","when":"request.headers[?\"x-canary\"].orValue(\"\") == \"1\"","mark":"canary"},
		{"at":"response","when":"response.code >= 500","set_headers":[{"name":"cache-control","value":"no-store"}]}
	]}}],
	"consumers":[
		{"name":"alice","attributes":{"tier":"gold"},"auth":{"key-auth":{"keys":["alice-key-0123456789"]}}},
		{"name":"bob","auth":{"key-auth":{"keys":["bob-key-01234567890"]}}}
	]}`

func TestChainWithConsumers(t *testing.T) {
	r, err := fakeenvoy.NewChain(chainJSON)
	if err != nil {
		t.Fatal(err)
	}
	alice := [2]string{"x-api-key", "alice-key-0123456789"}
	bob := [2]string{"x-api-key", "bob-key-01234567890"}
	res := r.Do(fakeenvoy.Request{Method: "POST", Headers: [][2]string{alice, {"x-canary", "1"}}})
	if res.Status != 200 || res.Upstream == nil || first(res.Upstream.Headers["x-tier"]) != "gold" || len(res.Violations) > 0 {
		t.Fatalf("alice: %d %v %v", res.Status, res.Upstream, res.Violations)
	}
	// Strings in the request state reach later filters and the access log.
	if res.FilterState["moe.state.cel.marks"] != "canary" || res.FilterState["moe.state.cel.tier"] != "gold" {
		t.Errorf("filter state %v", res.FilterState)
	}
	res = r.Do(fakeenvoy.Request{Method: "POST", Headers: [][2]string{bob}})
	if res.Status != 402 || res.Body != "upgrade to write\n" || res.Upstream != nil {
		t.Fatalf("bob's POST: %d %q", res.Status, res.Body)
	}
	res = r.Do(fakeenvoy.Request{Headers: [][2]string{bob}, Upstream: func(*fakeenvoy.Upstream) fakeenvoy.Response { return fakeenvoy.Response{Status: 503} }})
	if res.Status != 503 || first(res.Headers["cache-control"]) != "no-store" || first(res.Upstream.Headers["x-tier"]) != "free" {
		t.Fatalf("bob's GET, upstream 503: %d %v", res.Status, res.Headers)
	}
}

// A response rule that denies replaces the upstream's answer.
func TestResponseDenyReplacesTheAnswer(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("cel", `{"rules":[{"at":"response","when":"response.headers[?\"x-internal-error\"].hasValue()","deny":{"status":502,"body":"upstream failed\n"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Do(fakeenvoy.Request{Upstream: func(*fakeenvoy.Upstream) fakeenvoy.Response {
		return fakeenvoy.Response{Status: 200, Headers: [][2]string{{"x-internal-error", "stack trace..."}}, Body: []string{"secret details"}}
	}})
	if res.Status != 502 || res.Body != "upstream failed\n" || res.Headers["x-internal-error"] != nil || len(res.Violations) > 0 {
		t.Fatalf("%d %q %v %v", res.Status, res.Body, res.Headers, res.Violations)
	}
}

// phase before_route: a header a rule sets chooses the route.
func TestBeforeRouteRulesChooseTheRoute(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("cel", `{"phase":"before_route","rules":[
		{"when":"request.cookies[?\"beta\"].orValue(\"\") == \"yes\"","set_headers":[{"name":"x-backend","value":"beta"}],"mark":"beta"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	router := func(h map[string][]string) (string, string) {
		if first(h["x-backend"]) == "beta" {
			return "beta", "beta-cluster"
		}
		return "stable", "stable-cluster"
	}
	res := r.Do(fakeenvoy.Request{Router: router, Headers: [][2]string{{"cookie", "beta=yes"}}})
	if res.Upstream == nil || res.Upstream.Cluster != "beta-cluster" || res.RouteClears != 1 || len(res.Violations) > 0 {
		t.Fatalf("beta: %+v clears %d %v", res.Upstream, res.RouteClears, res.Violations)
	}
	res = r.Do(fakeenvoy.Request{Router: router})
	if res.Upstream == nil || res.Upstream.Cluster != "stable-cluster" || res.RouteClears != 0 {
		t.Fatalf("stable: %+v clears %d", res.Upstream, res.RouteClears)
	}
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// BenchmarkChain: a whole request through the moe filter manager over the
// fake Envoy, against the empty chain in the same run.
func BenchmarkChain(b *testing.B) {
	hdr := [2]string{"x-tenant", "acme"}
	bench := func(name, cfg string) {
		b.Run(name, func(b *testing.B) {
			fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"cel","config":`+cfg+`}]}`), hdr)
		})
	}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), hdr)
	})
	bench("one-condition-not-matched", `{"rules":[{"when":"request.headers[?\"x-tenant\"].orValue(\"\") == \"evil\"","deny":{}}]}`)
	bench("one-condition-matched-set-header-template", `{"rules":[{"when":"request.headers[?\"x-tenant\"].orValue(\"\") == \"acme\"","set_headers":[{"name":"x-tenant-seen","value":"$header_x-tenant"}]}]}`)
	bench("condition-and-cel-value", `{"rules":[{"when":"request.method == \"GET\" && request.url_path.startsWith(\"/\")","set_headers":[{"name":"x-key","expr":"request.method + \":\" + request.headers[\"x-tenant\"]"}]}]}`)
	bench("five-rules-request-response-log", `{"rules":[
		{"when":"request.headers[?\"x-tenant\"].orValue(\"\") == \"evil\"","deny":{}},
		{"when":"source.ip.startsWith(\"10.\")","mark":"internal"},
		{"when":"request.query_params[?\"debug\"].hasValue()","remove_headers":["x-debug"]},
		{"at":"response","when":"response.code >= 500","set_headers":[{"name":"cache-control","value":"no-store"}]},
		{"at":"log","when":"response.code == 429","log":"\"limited\""}]}`)
}
