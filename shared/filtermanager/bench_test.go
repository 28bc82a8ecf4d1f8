package filtermanager_test

import (
	"fmt"
	"testing"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/variables"
)

// trivial is a stateless plugin doing the least a real one does: read a
// request header, look at the response status, see the access log.
type trivial struct{}

func (trivial) OnReceive(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	h.Get("x-user")
	return api.Continue
}

func (trivial) Append(_ api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	h.Status()
	return api.Continue
}

func (trivial) Log(api.Context, api.RequestHeaderMap, api.ResponseHeaderMap, api.RequestInfo) {}

var benchReq = fakeenvoy.Request{Headers: [][2]string{{"x-user", "alice"}, {"user-agent", "bench"}}}

func runBench(b *testing.B, factory envoy.StreamFilterFactory, cfg any) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		res := fakeenvoy.Do(factory, cfg, benchReq)
		if res.Status != 200 {
			b.Fatalf("status %d %v", res.Status, res.Violations)
		}
	}
}

func passThrough(any, envoy.FilterCallbackHandler) envoy.StreamFilter {
	return &envoy.PassThroughStreamFilter{}
}

// BenchmarkChain measures the chain over the fake host. The Baseline case is a
// bare envoy.PassThroughStreamFilter driven by the same fake host in the same
// run: subtract it to get the framework's own cost (the report does that).
func BenchmarkChain(b *testing.B) {
	b.Run("baseline-passthrough", func(b *testing.B) { runBench(b, passThrough, nil) })
	modes := []struct {
		name  string
		block api.Blocking
	}{
		{"sync", 0},
		{"async-recv", api.BlockReceive},
		{"async-all", api.BlockReceive | api.BlockSend},
	}
	for _, m := range modes {
		for _, n := range []int{1, 5, 10} {
			b.Run(fmt.Sprintf("%s/%d", m.name, n), func(b *testing.B) {
				names := make([]string, n)
				for i := range names {
					names[i] = plugin(b, api.Needs{MayBlock: m.block}, trivial{})
				}
				cfg := mustChain(b, names...)
				runBench(b, filtermanager.Factory, cfg)
			})
		}
	}
}

// BenchmarkLean is the same over fakeenvoy.Bench, a minimal reusable fake (like
// a Go mock of Envoy): the numbers are close to the framework's own cost.
func BenchmarkLean(b *testing.B) {
	run := func(b *testing.B, factory envoy.StreamFilterFactory, cfg any) {
		fb := fakeenvoy.NewBench(factory, cfg, [2]string{"x-user", "alice"})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if st := fb.Run(); st != envoy.Continue {
				b.Fatalf("status %d", st)
			}
		}
	}
	b.Run("baseline-passthrough", func(b *testing.B) { run(b, passThrough, nil) })
	modes := []struct {
		name  string
		block api.Blocking
	}{
		{"sync", 0},
		{"async-recv", api.BlockReceive},
		{"async-all", api.BlockReceive | api.BlockSend},
	}
	for _, m := range modes {
		for _, n := range []int{1, 5, 10} {
			b.Run(fmt.Sprintf("%s/%d", m.name, n), func(b *testing.B) {
				names := make([]string, n)
				for i := range names {
					names[i] = plugin(b, api.Needs{MayBlock: m.block}, trivial{})
				}
				run(b, filtermanager.Factory, mustChain(b, names...))
			})
		}
	}
}

// streamer is trivial in all four phases: headers and body chunks, both ways.
type streamer struct{ trivial }

func (streamer) OnReceiveData(_ api.Context, c api.Buffer, _ bool) api.Status {
	c.Len()
	return api.Continue
}

func (streamer) AppendData(_ api.Context, c api.Buffer, _ bool) api.Status {
	c.Len()
	return api.Continue
}

// BenchmarkFourPhases: a request and a response with a body, the plugins
// implement DecodeHeaders, DecodeData, EncodeHeaders and EncodeData (plus the
// log); "async" makes all four phases asynchronous.
func BenchmarkFourPhases(b *testing.B) {
	run := func(b *testing.B, factory envoy.StreamFilterFactory, cfg any) {
		fb := fakeenvoy.NewBench(factory, cfg, [2]string{"x-user", "alice"})
		fb.WithBody = true
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if st := fb.Run(); st != envoy.Continue {
				b.Fatalf("status %d", st)
			}
		}
	}
	b.Run("baseline-passthrough", func(b *testing.B) { run(b, passThrough, nil) })
	for _, m := range []struct {
		name  string
		block api.Blocking
	}{{"sync", 0}, {"async", api.BlockReceive | api.BlockSend}} {
		for _, n := range []int{1, 5, 10} {
			b.Run(fmt.Sprintf("%s/%d", m.name, n), func(b *testing.B) {
				names := make([]string, n)
				for i := range names {
					names[i] = plugin(b, api.Needs{MayBlock: m.block, RequestBody: api.StreamingBody, ResponseBody: api.StreamingBody}, streamer{})
				}
				run(b, filtermanager.Factory, mustChain(b, names...))
			})
		}
	}
}

// readVars reads stream-info variables through the framework, as a plugin
// keying on $route_name or $remote_addr does.
type readVars struct {
	tpl *variables.Template
	out *string
}

func (r readVars) OnReceive(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	*r.out = r.tpl.Render(ctx)
	return api.Continue
}

// fakeenvoy.Bench provides a StreamInfo (route, cluster, addresses), so
// plugins reading it can be benchmarked.
func TestBenchProvidesStreamInfo(t *testing.T) {
	var out string
	tpl := variables.MustCompileTemplate("$route_name|$cluster|$remote_addr|$remote_port")
	cfg := mustChain(t, plugin(t, api.Needs{}, readVars{tpl, &out}))
	fb := fakeenvoy.NewBench(filtermanager.Factory, cfg)
	if st := fb.Run(); st != envoy.Continue {
		t.Fatalf("status %d", st)
	}
	if want := "bench-route|bench-cluster|10.0.0.1|12345"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
	fb.RouteName, fb.Cluster, fb.RemoteAddr = "r2", "c2", "[::1]:8080"
	fb.Run()
	if want := "r2|c2|::1|8080"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func BenchmarkVariables(b *testing.B) {
	var out string
	tpl := variables.MustCompileTemplate("$remote_addr")
	cfg := mustChain(b, plugin(b, api.Needs{}, readVars{tpl, &out}))
	fb := fakeenvoy.NewBench(filtermanager.Factory, cfg)
	b.ReportAllocs()
	for b.Loop() {
		fb.Run()
	}
}

// valuesReader reads a header's values n times, as plugins matching several
// header rules do.
type valuesReader struct{ n int }

func (r valuesReader) OnReceive(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	for range r.n {
		if len(h.Values("x-user")) != 1 {
			panic("x-user")
		}
	}
	return api.Continue
}

// BenchmarkHeaderValues: one plugin calling Values n times per request.
func BenchmarkHeaderValues(b *testing.B) {
	for _, n := range []int{1, 4, 64} {
		b.Run(fmt.Sprintf("reads-%d", n), func(b *testing.B) {
			cfg := mustChain(b, plugin(b, api.Needs{}, valuesReader{n}))
			fb := fakeenvoy.NewBench(filtermanager.Factory, cfg, [2]string{"x-user", "alice"})
			b.ReportAllocs()
			for b.Loop() {
				if st := fb.Run(); st != envoy.Continue {
					b.Fatalf("status %d", st)
				}
			}
		})
	}
}

// Values must not allocate per call: reading a header 4 times costs what
// reading it once costs (the first read copies the map).
func TestHeaderValuesDoesNotAllocate(t *testing.T) {
	allocs := func(n int) float64 {
		cfg := mustChain(t, plugin(t, api.Needs{}, valuesReader{n}))
		fb := fakeenvoy.NewBench(filtermanager.Factory, cfg, [2]string{"x-user", "alice"})
		return testing.AllocsPerRun(200, func() { fb.Run() })
	}
	if one, four := allocs(1), allocs(4); four != one {
		t.Errorf("4 Values calls: %v allocs per request, with one %v", four, one)
	}
}

// A request through a sync chain costs one allocation, the stream, whether or
// not its plugins see bodies (the bodies are in the stream then) and whether
// or not the request has one.
func TestStreamIsTheRequestsOneAllocation(t *testing.T) {
	streaming := api.Needs{RequestBody: api.StreamingBody, ResponseBody: api.StreamingBody}
	for _, tc := range []struct {
		name    string
		needs   api.Needs
		f       any
		plugins int
		body    bool
	}{
		{"header-only plugin, no body", api.Needs{}, regularHooks{}, 1, false},
		{"header-only plugin, body", api.Needs{}, regularHooks{}, 1, true},
		{"six header-only plugins, body", api.Needs{}, regularHooks{}, 6, true},
		{"streaming plugin, body", streaming, passAll{}, 1, true},
		{"six streaming plugins, body", streaming, passAll{}, 6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := make([]string, tc.plugins)
			for i := range names {
				names[i] = plugin(t, tc.needs, tc.f)
			}
			fb := fakeenvoy.NewBench(filtermanager.Factory, mustChain(t, names...))
			fb.WithBody = tc.body
			if n := testing.AllocsPerRun(200, func() { fb.Run() }); n != 1 {
				t.Errorf("%v allocations per request, want 1", n)
			}
		})
	}
}

// passAll implements every hook and does nothing: the plugin of HTNN's filter
// manager benchmarks (api.PassThroughFilter), for an equal-work comparison.
type passAll struct{}

func (passAll) OnReceive(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	return api.Continue
}
func (passAll) Append(api.Context, api.ResponseHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	return api.Continue
}
func (passAll) OnReceiveData(api.Context, api.Buffer, bool) api.Status { return api.Continue }
func (passAll) AppendData(api.Context, api.Buffer, bool) api.Status    { return api.Continue }
func (passAll) Log(api.Context, api.RequestHeaderMap, api.ResponseHeaderMap, api.RequestInfo) {
}

// regularHooks is HTNN's "regular" plugin: request headers and the log only.
type regularHooks struct{}

func (regularHooks) OnReceive(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	return api.Continue
}
func (regularHooks) Log(api.Context, api.RequestHeaderMap, api.ResponseHeaderMap, api.RequestInfo) {
}

// BenchmarkEqualWork mirrors mosn/htnn's api/pkg/filtermanager benchmarks
// (run them beside this one in the same run to compare): the same calls per
// request — DecodeHeaders, DecodeData, EncodeHeaders, EncodeData (each with
// end of stream on the data), OnLog — plus the OnStreamComplete and OnDestroy
// Envoy always makes, over the lean fake. "all-phases-sync" is
// BenchmarkFilterManagerAllPhaseCanSyncRun, "all-phases-async"
// BenchmarkFilterManagerAllPhase, "regular-async" BenchmarkFilterManagerRegular
// (request headers in a goroutine, then the log); the N-plugin cases give the
// cost per added plugin.
func BenchmarkEqualWork(b *testing.B) {
	streaming := api.Needs{RequestBody: api.StreamingBody, ResponseBody: api.StreamingBody}
	async := streaming
	async.MayBlock = api.BlockReceive | api.BlockSend
	run := func(b *testing.B, cfg any, body bool) {
		fb := fakeenvoy.NewBench(filtermanager.Factory, cfg)
		fb.WithBody = body
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if st := fb.Run(); st != envoy.Continue {
				b.Fatalf("status %d", st)
			}
		}
	}
	chain := func(b *testing.B, n int, needs api.Needs, f any) any {
		names := make([]string, n)
		for i := range names {
			names[i] = plugin(b, needs, f)
		}
		return mustChain(b, names...)
	}
	for _, n := range []int{1, 5, 10, 20} {
		b.Run(fmt.Sprintf("all-phases-sync/%d", n), func(b *testing.B) { run(b, chain(b, n, streaming, passAll{}), true) })
	}
	b.Run("all-phases-async/1", func(b *testing.B) { run(b, chain(b, 1, async, passAll{}), true) })
	b.Run("regular-async/1", func(b *testing.B) {
		run(b, chain(b, 1, api.Needs{MayBlock: api.BlockReceive}, regularHooks{}), false)
	})
}
