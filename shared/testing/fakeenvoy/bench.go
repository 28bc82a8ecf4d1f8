package fakeenvoy

import (
	"strconv"
	"sync"
	"testing"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/filtermanager"
)

// Bench is a minimal, reusable fake Envoy for benchmarks: one headers-only
// request (DecodeHeaders, EncodeHeaders, OnLog, OnDestroy) per Run, with
// preallocated header maps and a reusable channel for async Continue, so that
// nearly all measured cost and allocation is the filter's own. It does not do
// Do's strict checks; use Do in tests.
type Bench struct {
	// WithBody makes Run send a one-chunk request and response body, so a
	// request has four phases (headers and data, each way).
	WithBody bool
	// What the stream info reports, for plugins reading $route_name,
	// $cluster, $remote_addr...: NewBench sets "bench-route",
	// "bench-cluster", "10.0.0.1:12345" and "127.0.0.1:10000"; change them
	// before Run.
	RouteName, Cluster, RemoteAddr, LocalAddr string

	factory envoy.StreamFilterFactory
	cfg     any
	reqH    benchHeaders
	respH   benchHeaders
	cb      benchCB
	ch      chan envoy.StatusType
	reqB    benchBuf
	respB   benchBuf
	info    benchInfo
	fs      benchFilterState
}

// NewBench prepares a bench driver. reqHeaders are extra request headers.
func NewBench(factory envoy.StreamFilterFactory, cfg any, reqHeaders ...[2]string) *Bench {
	b := &Bench{factory: factory, cfg: cfg, ch: make(chan envoy.StatusType, 1),
		RouteName: "bench-route", Cluster: "bench-cluster", RemoteAddr: "10.0.0.1:12345", LocalAddr: "127.0.0.1:10000"}
	b.info.b = b
	b.reqH.init(append([][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "example.com"}, {":scheme", "http"}}, reqHeaders...))
	b.respH.init([][2]string{{":status", "200"}, {"content-length", "2"}})
	b.cb.b = b
	b.cb.dec.b = b
	b.cb.enc.b = b
	return b
}

// Run drives one request and returns the response status seen by Envoy.
func (b *Bench) Run() envoy.StatusType {
	b.reqH.reset()
	b.respH.reset()
	b.info.encoded = false
	clear(b.fs.m)
	f := b.factory(b.cfg, &b.cb)
	wait := func(st envoy.StatusType) envoy.StatusType {
		if st == envoy.Running {
			return <-b.ch
		}
		return st
	}
	st := wait(f.DecodeHeaders(&b.reqH, !b.WithBody))
	if b.WithBody && st == envoy.Continue {
		b.reqB.data = append(b.reqB.data[:0], "request body"...)
		st = wait(f.DecodeData(&b.reqB, true))
	}
	if st != envoy.Continue {
		return st
	}
	b.info.encoded = true
	st = wait(f.EncodeHeaders(&b.respH, !b.WithBody))
	if b.WithBody && st == envoy.Continue {
		b.respB.data = append(b.respB.data[:0], "response body"...)
		st = wait(f.EncodeData(&b.respB, true))
	}
	f.OnStreamComplete()
	f.OnLog(&b.reqH, nil, &b.respH, nil)
	f.OnDestroy(envoy.Normal)
	return st
}

type benchHeaders struct {
	mu    sync.Mutex
	init0 [][2]string
	kv    [][2]string
}

func (h *benchHeaders) init(kv [][2]string) {
	h.init0 = kv
	h.kv = make([][2]string, 0, len(kv)+8)
}

func (h *benchHeaders) reset() {
	h.kv = append(h.kv[:0], h.init0...)
}

func (h *benchHeaders) GetRaw(k string) string { v, _ := h.Get(k); return v }
func (h *benchHeaders) Get(k string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.kv {
		if p[0] == k {
			return p[1], true
		}
	}
	return "", false
}

// Values returns a single value without allocating (Envoy's SDK returns its
// own slice too), so benchmarks measure the framework's cost, not the fake's.
func (h *benchHeaders) Values(k string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for i := range h.kv {
		if h.kv[i][0] != k {
			continue
		}
		if out == nil {
			out = h.kv[i][1:2:2]
		} else {
			out = append(out, h.kv[i][1])
		}
	}
	return out
}
func (h *benchHeaders) Set(k, v string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.kv {
		if h.kv[i][0] == k {
			h.kv[i][1] = v
			return
		}
	}
	h.kv = append(h.kv, [2]string{k, v})
}
func (h *benchHeaders) Add(k, v string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kv = append(h.kv, [2]string{k, v})
}
func (h *benchHeaders) Del(k string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.kv[:0]
	for _, p := range h.kv {
		if p[0] != k {
			out = append(out, p)
		}
	}
	h.kv = out
}
func (h *benchHeaders) Range(f func(k, v string) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.kv {
		if !f(p[0], p[1]) {
			return
		}
	}
}
func (h *benchHeaders) RangeWithCopy(f func(k, v string) bool) { h.Range(f) }
func (h *benchHeaders) GetAllHeaders() map[string][]string {
	m := map[string][]string{}
	h.Range(func(k, v string) bool { m[k] = append(m[k], v); return true })
	return m
}
func (h *benchHeaders) Scheme() string     { return h.GetRaw(":scheme") }
func (h *benchHeaders) Method() string     { return h.GetRaw(":method") }
func (h *benchHeaders) Host() string       { return h.GetRaw(":authority") }
func (h *benchHeaders) Path() string       { return h.GetRaw(":path") }
func (h *benchHeaders) SetMethod(v string) { h.Set(":method", v) }
func (h *benchHeaders) SetHost(v string)   { h.Set(":authority", v) }
func (h *benchHeaders) SetPath(v string)   { h.Set(":path", v) }
func (h *benchHeaders) Status() (int, bool) {
	v, ok := h.Get(":status")
	n, _ := strconv.Atoi(v)
	return n, ok
}

type benchProc struct{ b *Bench }

func (p *benchProc) Continue(s envoy.StatusType) { p.b.ch <- s }
func (p *benchProc) SendLocalReply(code int, _ string, _ map[string][]string, _ int64, _ string) {
	p.b.ch <- envoy.LocalReply
}
func (p *benchProc) RecoverPanic()                              {}
func (p *benchProc) AddData([]byte, bool)                       {}
func (p *benchProc) InjectData([]byte)                          {}
func (p *benchProc) SetUpstreamOverrideHost(string, bool) error { return nil }

type benchCB struct {
	b        *Bench
	dec, enc benchProc
}

func (c *benchCB) StreamInfo() envoy.StreamInfo { return &c.b.info }
func (c *benchCB) ClearRouteCache()             {}
func (c *benchCB) RefreshRouteCache()           {}
func (c *benchCB) Log(envoy.LogType, string)    {}
func (c *benchCB) LogLevel() envoy.LogType      { return envoy.Error }

// GetProperty answers the stream-info properties the framework reads
// (Route().ClusterName() is xds.cluster_name).
func (c *benchCB) GetProperty(key string) (string, error) {
	switch key {
	case "xds.cluster_name":
		if c.b.Cluster != "" {
			return c.b.Cluster, nil
		}
	case "xds.route_name":
		return c.b.RouteName, nil
	case "source.address":
		return c.b.RemoteAddr, nil
	case "destination.address":
		return c.b.LocalAddr, nil
	}
	return "", envoy.ErrValueNotFound
}
func (c *benchCB) SecretManager() envoy.SecretManager                   { return secrets{} }
func (c *benchCB) DecoderFilterCallbacks() envoy.DecoderFilterCallbacks { return &c.dec }
func (c *benchCB) EncoderFilterCallbacks() envoy.EncoderFilterCallbacks { return &c.enc }

// benchBuf is a minimal BufferInstance.
type benchBuf struct{ data []byte }

func (b *benchBuf) Write(p []byte) (int, error) { b.data = append(b.data, p...); return len(p), nil }
func (b *benchBuf) WriteString(s string) (int, error) {
	b.data = append(b.data, s...)
	return len(s), nil
}
func (b *benchBuf) WriteByte(c byte) error   { b.data = append(b.data, c); return nil }
func (b *benchBuf) WriteUint16(uint16) error { return nil }
func (b *benchBuf) WriteUint32(uint32) error { return nil }
func (b *benchBuf) WriteUint64(uint64) error { return nil }
func (b *benchBuf) Bytes() []byte            { return append([]byte(nil), b.data...) }
func (b *benchBuf) Drain(n int)              { b.data = b.data[min(n, len(b.data)):] }
func (b *benchBuf) Len() int                 { return len(b.data) }
func (b *benchBuf) Reset()                   { b.data = b.data[:0] }
func (b *benchBuf) String() string           { return string(b.data) }
func (b *benchBuf) Append(d []byte) error    { b.data = append(b.data, d...); return nil }
func (b *benchBuf) Set(d []byte) error       { b.data = append(b.data[:0], d...); return nil }
func (b *benchBuf) SetString(s string) error { b.data = append(b.data[:0], s...); return nil }
func (b *benchBuf) Prepend(d []byte) error {
	b.data = append(append([]byte(nil), d...), b.data...)
	return nil
}
func (b *benchBuf) PrependString(s string) error { return b.Prepend([]byte(s)) }
func (b *benchBuf) AppendString(s string) error  { return b.Append([]byte(s)) }

// benchInfo is the stream info of a Bench request: fixed values from the
// Bench fields, a pointer into the Bench so that reading it allocates nothing.
type benchInfo struct {
	b       *Bench
	encoded bool // the response headers were handed to the filter
}

func (i *benchInfo) GetRouteName() string                  { return i.b.RouteName }
func (i *benchInfo) FilterChainName() string               { return "" }
func (i *benchInfo) Protocol() (string, bool)              { return "HTTP/1.1", true }
func (i *benchInfo) AttemptCount() uint32                  { return 1 }
func (i *benchInfo) DownstreamLocalAddress() string        { return i.b.LocalAddr }
func (i *benchInfo) DownstreamRemoteAddress() string       { return i.b.RemoteAddr }
func (i *benchInfo) UpstreamLocalAddress() (string, bool)  { return "", false }
func (i *benchInfo) UpstreamRemoteAddress() (string, bool) { return "", false }
func (i *benchInfo) UpstreamClusterName() (string, bool) {
	return i.b.Cluster, i.b.Cluster != ""
}
func (i *benchInfo) ResponseCode() (uint32, bool) {
	if !i.encoded {
		return 0, false
	}
	s, ok := i.b.respH.Status()
	return uint32(s), ok
}
func (i *benchInfo) ResponseCodeDetails() (string, bool)          { return "", false }
func (i *benchInfo) DynamicMetadata() envoy.DynamicMetadata       { return nil }
func (i *benchInfo) FilterState() envoy.FilterState               { return &i.b.fs }
func (i *benchInfo) VirtualClusterName() (string, bool)           { return "", false }
func (i *benchInfo) WorkerID() uint32                             { return 0 }
func (i *benchInfo) DrainConnectionUponCompletion()               {}
func (i *benchInfo) DownstreamSslConnection() envoy.SslConnection { return nil }

// benchFilterState keeps string filter state for one request (cleared by Run).
type benchFilterState struct {
	mu sync.Mutex
	m  map[string]string
}

func (f *benchFilterState) SetString(k, v string, _ envoy.StateType, _ envoy.LifeSpan, _ envoy.StreamSharing) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]string{}
	}
	f.m[k] = v
}

func (f *benchFilterState) GetString(k string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[k]
}

// BenchChain benchmarks the moe filter with cfg (from ParseFilter(filtermanager.Parser{}, ...))
// on requests carrying reqHeaders; the benchmark fails if a request does not pass.
func BenchChain(b *testing.B, cfg any, reqHeaders ...[2]string) {
	b.Helper()
	benchLoop(b, filtermanager.Factory, cfg, reqHeaders...)
}

// BenchPassThrough benchmarks a bare Envoy pass-through filter on the same fake: the baseline
// for BenchChain.
func BenchPassThrough(b *testing.B) {
	b.Helper()
	benchLoop(b, func(any, envoy.FilterCallbackHandler) envoy.StreamFilter {
		return &envoy.PassThroughStreamFilter{}
	}, nil)
}

func benchLoop(b *testing.B, factory envoy.StreamFilterFactory, cfg any, reqHeaders ...[2]string) {
	b.Helper()
	fb := NewBench(factory, cfg, reqHeaders...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if st := fb.Run(); st != envoy.Continue {
			b.Fatalf("status %v", st)
		}
	}
}

// MustParseChain is ParseFilter(filtermanager.Parser{}, jsonText) for a moe filter config,
// failing the test or benchmark on error.
func MustParseChain(t testing.TB, jsonText string) any {
	t.Helper()
	cfg, err := ParseFilter(filtermanager.Parser{}, jsonText)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
