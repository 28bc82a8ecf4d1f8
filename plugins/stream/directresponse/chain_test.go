package directresponse_test

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Through the real framework over a fake Envoy: an answer is a local reply
// and nothing reaches the upstream.
func TestChain(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("direct-response", `{"rules": [
		{"match": {"path": {"exact": "/healthz"}}, "body": "ok\n"},
		{"match": {"path": {"prefix": "/mock/"}}, "status": 202, "headers": {"content-type": "application/json"}, "body": "{}"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Do(fakeenvoy.Request{Path: "/healthz"})
	if res.Status != 200 || res.Body != "ok\n" || res.Upstream != nil || res.LocalReply == nil || len(res.Violations) > 0 {
		t.Fatalf("health: %d %q upstream %v violations %v", res.Status, res.Body, res.Upstream, res.Violations)
	}
	res = r.Do(fakeenvoy.Request{Path: "/mock/x", Method: "POST", Body: []string{"ignored"}})
	if res.Status != 202 || res.Body != "{}" || res.Headers["content-type"][0] != "application/json" || res.Upstream != nil || len(res.Violations) > 0 {
		t.Fatalf("mock: %d %q %v upstream %v violations %v", res.Status, res.Body, res.Headers, res.Upstream, res.Violations)
	}
	res = r.Do(fakeenvoy.Request{Path: "/orders"})
	if res.Status != 200 || res.Upstream == nil || res.LocalReply != nil {
		t.Fatalf("no rule: %d upstream %v", res.Status, res.Upstream)
	}
}

// A route's config replaces the filter's: a maintenance page on one route.
func TestChainPerRoute(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("direct-response", `{"rules": [{"match": {"path": {"exact": "/healthz"}}, "body": "ok\n"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	shop, err := r.WithRoute(`{"plugins":[{"name":"direct-response","config":{"rules":[{"status":503,"body":"maintenance"}]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if res := shop.Do(fakeenvoy.Request{Path: "/shop/cart"}); res.Status != 503 || res.Body != "maintenance" {
		t.Fatalf("shop: %d %q", res.Status, res.Body)
	}
	if res := r.Do(fakeenvoy.Request{Path: "/shop/cart"}); res.Status != 200 || res.Upstream == nil {
		t.Fatalf("filter level: %d", res.Status)
	}
}

// BenchmarkChain: requests no rule matches (the cost every proxied request
// pays), through the moe filter manager on the fake Envoy, against the empty
// chain in the same run.
func BenchmarkChain(b *testing.B) {
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`))
	})
	b.Run("3-rules-no-match", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"direct-response","config":{"rules":[
			{"match":{"path":{"exact":"/healthz"},"methods":["GET","HEAD"]},"body":"ok\n"},
			{"match":{"path":{"prefix":"/mock/"}},"body":"{}"},
			{"match":{"headers":[{"name":"x-maintenance","exact":"1"}]},"status":503}]}}]}`))
	})
}
