package cors_test

import (
	"testing"

	_ "github.com/moeproxy/moe/plugins/auth/keyauth"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// cors before key-auth, as documented: the preflight (which carries no
// credentials) is answered before key-auth would refuse it, and key-auth's
// 401 to a page of an allowed origin carries the CORS headers, so the page
// can read why.
const chainJSON = `{"plugins":[
	{"name":"cors","config":{"allow_origins":["https://app.example.com"],"allow_headers":["x-api-key"],"allow_methods":["GET","PUT"],"allow_credentials":true}},
	{"name":"key-auth","config":{"sources":["header:x-api-key"],"consumers":[{"name":"alice","keys":["alice-key-0123456789"]}]}}
]}`

func TestChainWithAuth(t *testing.T) {
	r, err := fakeenvoy.NewChain(chainJSON)
	if err != nil {
		t.Fatal(err)
	}
	origin := [2]string{"origin", "https://app.example.com"}
	res := r.Do(fakeenvoy.Request{Method: "OPTIONS", Headers: [][2]string{origin, {"access-control-request-method", "PUT"}, {"access-control-request-headers", "x-api-key"}}})
	if res.Status != 204 || res.Upstream != nil || first(res.Headers["access-control-allow-origin"]) != "https://app.example.com" ||
		first(res.Headers["access-control-allow-headers"]) != "x-api-key" || len(res.Violations) > 0 {
		t.Fatalf("preflight: %d upstream=%v headers=%v violations=%v", res.Status, res.Upstream, res.Headers, res.Violations)
	}
	if n := len(res.Headers["vary"]); n != 1 {
		t.Errorf("preflight vary %v: the reply passed Append twice?", res.Headers["vary"])
	}
	res = r.Do(fakeenvoy.Request{Method: "PUT", Headers: [][2]string{origin}})
	if res.Status != 401 || first(res.Headers["access-control-allow-origin"]) != "https://app.example.com" ||
		first(res.Headers["access-control-allow-credentials"]) != "true" || first(res.Headers["vary"]) != "Origin" {
		t.Fatalf("401 of key-auth: %d %v", res.Status, res.Headers)
	}
	res = r.Do(fakeenvoy.Request{Method: "PUT", Headers: [][2]string{origin, {"x-api-key", "alice-key-0123456789"}},
		Upstream: func(*fakeenvoy.Upstream) fakeenvoy.Response {
			return fakeenvoy.Response{Status: 200, Headers: [][2]string{{"access-control-allow-origin", "*"}}}
		}})
	if acao := res.Headers["access-control-allow-origin"]; res.Status != 200 || res.Upstream == nil || len(acao) != 1 || acao[0] != "https://app.example.com" || len(res.Violations) > 0 {
		t.Fatalf("authenticated: %d %v %v", res.Status, res.Headers, res.Violations)
	}
	res = r.Do(fakeenvoy.Request{Method: "OPTIONS", Headers: [][2]string{{"origin", "https://evil.test"}, {"access-control-request-method", "PUT"}}})
	if res.Status != 403 || res.Upstream != nil || res.Headers["access-control-allow-origin"] != nil {
		t.Fatalf("preflight of another origin: %d %v", res.Status, res.Headers)
	}
}

// A route's config replaces the chain's.
func TestPerRouteConfig(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("cors", `{"allow_origins":["https://app.example.com"]}`)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := r.WithRoute(`{"plugins":[{"name":"cors","config":{"allow_origins":["*"]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	req := fakeenvoy.Request{Headers: [][2]string{{"origin", "https://other.test"}}}
	if res := r.Do(req); res.Headers["access-control-allow-origin"] != nil {
		t.Errorf("chain config: %v", res.Headers)
	}
	if res := pub.Do(req); first(res.Headers["access-control-allow-origin"]) != "*" {
		t.Errorf("route config: %v", res.Headers)
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
	origin := [2]string{"origin", "https://shop.example.com"}
	const cfg = `{"allow_origins":["https://app.example.com","https://*.example.com"],"allow_origin_regexes":["http://localhost:[0-9]+"],"allow_methods":["GET","POST","PUT"],"allow_headers":["content-type","authorization"],"expose_headers":["x-upstream"],"allow_credentials":true,"max_age":600}`
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), origin)
	})
	b.Run("cors-allowed-wildcard-origin", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"cors","config":`+cfg+`}]}`), origin)
	})
	b.Run("cors-disallowed-origin-regex-tried", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"cors","config":`+cfg+`}]}`), [2]string{"origin", "https://evil.test"})
	})
	b.Run("cors-no-origin", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"cors","config":`+cfg+`}]}`))
	})
}
