package sentinel

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// passFilter is the baseline: a per-request filter doing nothing, created and
// called like the sentinel filter.
type passFilter struct{ n int }

func (p *passFilter) OnReceive(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	p.n++
	return api.Continue
}
func (p *passFilter) Append(api.Context, api.ResponseHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	p.n++
	return api.Continue
}
func (p *passFilter) OnDestroy() { p.n++ }

type benchFilter interface {
	api.ReceiverFilter
	api.SenderFilter
	OnDestroy()
}

func runBench(b *testing.B, mk func() benchFilter, ctx *fakeCtx) {
	response := resp(200)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := mk()
		if f.OnReceive(ctx, ctx.Req, nil, nil) != api.Continue {
			b.Fatal("blocked")
		}
		f.Append(ctx, response, nil, nil)
		f.OnDestroy()
	}
}

func BenchmarkPassThroughBaseline(b *testing.B) {
	runBench(b, func() benchFilter { return &passFilter{} }, newCtx("r"))
}

func benchConfig(b *testing.B, raw string, ctx *fakeCtx) {
	c, _ := load(b, raw)
	runBench(b, func() benchFilter { return &filter{rt: c.rt} }, ctx)
}

func BenchmarkSentinelFlow(b *testing.B) {
	benchConfig(b, `{"namespace":"bench-flow","flow":[{"threshold":1e12}]}`, newCtx("r"))
}

func BenchmarkSentinelFlowTemplateKey(b *testing.B) {
	benchConfig(b, `{"namespace":"bench-key","resource":"$route_name:$header_x-user","flow":[{"threshold":1e12}]}`,
		newCtx("r", "x-user", "alice"))
}

func BenchmarkSentinelAllRuleKinds(b *testing.B) {
	benchConfig(b, `{"namespace":"bench-all","flow":[{"threshold":1e12}],"isolation":[{"max_concurrency":1000}],
		"circuit_breakers":[{"strategy":"error_ratio","threshold":0.5},{"strategy":"slow_request_ratio","threshold":0.9,"max_allowed_rt":"1s"}],
		"hotspot":[{"key":"$header_x-user","threshold":1000000000}],
		"system":[{"metric":"concurrency","threshold":100000}],
		"pressure_test":{"flow":[{"threshold":10}]}}`,
		newCtx("r", "x-user", "alice"))
}

func BenchmarkSentinelNoRules(b *testing.B) {
	benchConfig(b, `{"namespace":"bench-none"}`, newCtx("r"))
}

// The same, through the real moe filter manager and the framework's fake Envoy
// (cgo crossings excluded): baseline is the moe filter with an empty chain.
// fakeenvoy.Bench answers no route name, so these use resource templates
// without $route_name.
func benchChain(b *testing.B, chain string) {
	cfg, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, chain)
	if err != nil {
		b.Fatal(err)
	}
	if d, ok := cfg.(interface{ Destroy() }); ok {
		b.Cleanup(d.Destroy)
	}
	bench := fakeenvoy.NewBench(filtermanager.Factory, cfg, [2]string{"x-user", "alice"})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bench.Run()
	}
}

func BenchmarkChainEmptyBaseline(b *testing.B) { benchChain(b, `{"plugins":[]}`) }

func BenchmarkChainSentinelFlow(b *testing.B) {
	benchChain(b, `{"plugins":[{"name":"sentinel","config":{"namespace":"bench-chain","resource":"api","flow":[{"threshold":1e12}]}}]}`)
}

func BenchmarkChainSentinelFlowTemplateKey(b *testing.B) {
	benchChain(b, `{"plugins":[{"name":"sentinel","config":{"namespace":"bench-chain-key","resource":"api:$header_x-user","flow":[{"threshold":1e12}],"hotspot":[{"key":"$header_x-user","threshold":1000000000}]}}]}`)
}
