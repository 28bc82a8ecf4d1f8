package template_test

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Through the real framework over a fake Envoy: the refusal is a local reply,
// and the response path (which local replies take too) stamps it.
func TestChainRefusesAndStampsTheLocalReply(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("template", `{"require_header": "x-tenant", "stamp": "$route_name"}`)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Do(fakeenvoy.Request{RouteName: "r1"})
	if res.Status != 400 || res.Body != "missing x-tenant\n" || res.Upstream != nil || res.Headers["x-moe-template"][0] != "r1" {
		t.Fatalf("refused: status %d body %q upstream %v headers %v", res.Status, res.Body, res.Upstream, res.Headers)
	}
	res = r.Do(fakeenvoy.Request{RouteName: "r1", Headers: [][2]string{{"x-tenant", "t1"}}})
	if res.Status != 200 || res.Upstream == nil || res.Headers["x-moe-template"][0] != "r1" || len(res.Violations) > 0 {
		t.Fatalf("passed: status %d headers %v violations %v", res.Status, res.Headers, res.Violations)
	}
}

// BenchmarkChain: a whole request through the moe filter manager on the fake
// Envoy, against the empty chain measured in the same run.
func BenchmarkChain(b *testing.B) {
	tenant := [2]string{"x-tenant", "t1"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), tenant)
	})
	b.Run("template-require-and-stamp", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"template","config":{"require_header":"x-tenant","stamp":"$header_x-tenant"}}]}`), tenant)
	})
}
