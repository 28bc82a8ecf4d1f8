package limitreq

// A minimal fake of the framework's per-request objects, enough for this
// plugin. Unused methods come from nil embedded interfaces and panic if
// called, which flags an unexpected dependency.

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/registry"
)

type fakeReply struct {
	code    int
	headers api.HeaderMap
	body    string
}

type fakeCtx struct {
	context.Context
	remote   string
	req      *fakeReq
	consumer *api.Consumer
	reply    *fakeReply
	recv     *fakeRecv
	info     *fakeInfo
}

func newCtx(remote string, req *fakeReq) *fakeCtx {
	c := &fakeCtx{Context: context.Background(), remote: remote, req: req}
	c.recv = &fakeRecv{c: c}
	c.info = &fakeInfo{c: c}
	return c
}

func (c *fakeCtx) PluginName() string                  { return Name }
func (c *fakeCtx) RequestID() string                   { return "test" }
func (c *fakeCtx) Log() api.Logger                     { return nopLog{} }
func (c *fakeCtx) Receiver() api.ReceiverFilterHandler { return c.recv }
func (c *fakeCtx) Sender() api.SenderFilterHandler     { return nil }
func (c *fakeCtx) Consumer() *api.Consumer             { return c.consumer }
func (c *fakeCtx) SetConsumer(k *api.Consumer)         { c.consumer = k }
func (c *fakeCtx) GetState(string) (any, bool)         { return nil, false }
func (c *fakeCtx) SetState(string, any)                {}
func (c *fakeCtx) Var(string) (string, bool)           { return "", false }

type nopLog struct{}

func (nopLog) Debugf(string, ...any) {}
func (nopLog) Infof(string, ...any)  {}
func (nopLog) Warnf(string, ...any)  {}
func (nopLog) Errorf(string, ...any) {}

type fakeRecv struct {
	api.ReceiverFilterHandler
	c *fakeCtx
}

func (r *fakeRecv) SendHijackReplyWithBody(code int, h api.HeaderMap, body string) error {
	r.c.reply = &fakeReply{code: code, headers: h, body: body}
	return nil
}
func (r *fakeRecv) RequestInfo() api.RequestInfo            { return r.c.info }
func (r *fakeRecv) GetRequestHeaders() api.RequestHeaderMap { return r.c.req }

type fakeInfo struct {
	api.RequestInfo
	c *fakeCtx
}

func (i *fakeInfo) DownstreamRemoteAddress() string { return i.c.remote }

type fakeReq struct {
	api.Headers
	method, path string
}

func (r *fakeReq) Method() string           { return r.method }
func (r *fakeReq) Path() string             { return r.path }
func (r *fakeReq) Host() string             { return "example.com" }
func (r *fakeReq) Scheme() string           { return "http" }
func (r *fakeReq) SetMethod(m string) error { r.method = m; return nil }
func (r *fakeReq) SetPath(p string) error   { r.path = p; return nil }
func (r *fakeReq) SetHost(string) error     { return nil }

func newReq(kv ...string) *fakeReq {
	return &fakeReq{Headers: api.NewHeaders(kv...), method: "GET", path: "/"}
}

// fakeClock is a manual clock, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// parse decodes a JSON config the way the framework does (defaults, strict
// decode, Validate, Init) with readable metrics and, if clock != nil, a fake
// clock.
func parse(t testing.TB, raw string, clock *fakeClock) (*Config, *fakeMetrics) {
	t.Helper()
	c := newConfig().(*Config)
	if err := config.DecodeStrict([]byte(raw), c); err != nil {
		t.Fatalf("config %s: %v", raw, err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("config %s: %v", raw, err)
	}
	m := &fakeMetrics{counts: map[string]*atomic.Int64{}}
	if err := c.Init(fakeEnv{m}); err != nil {
		t.Fatalf("config %s: %v", raw, err)
	}
	if clock != nil {
		c.rt.now = clock.Now
	}
	return c, m
}

func tryParse(raw string) (*Config, error) {
	p, _ := registry.Get(Name)
	c, err := config.DecodePlugin(p, []byte(raw), false)
	if err != nil {
		return nil, err
	}
	return c.(*Config), nil
}

func filterOf(c *Config) api.ReceiverFilter {
	p, _ := registry.Get(Name)
	return p.Factory(c).(api.ReceiverFilter)
}

type fakeEnv struct{ m *fakeMetrics }

func (e fakeEnv) PluginName() string   { return Name }
func (e fakeEnv) IsRoute() bool        { return false }
func (e fakeEnv) Metrics() api.Metrics { return e.m }

// fakeMetrics keeps counters and gauges by name.
type fakeMetrics struct {
	mu     sync.Mutex
	counts map[string]*atomic.Int64
}

func (m *fakeMetrics) v(name string) *atomic.Int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.counts[name]
	if !ok {
		c = &atomic.Int64{}
		m.counts[name] = c
	}
	return c
}

func (m *fakeMetrics) Counter(name string) api.Counter { return fakeCounter{m.v(name)} }
func (m *fakeMetrics) Gauge(name string) api.Gauge     { return fakeGauge{m.v(name)} }
func (m *fakeMetrics) Histogram(string, []uint64) api.Histogram {
	panic("not used")
}
func (m *fakeMetrics) get(name string) int64 { return m.v(name).Load() }

type fakeCounter struct{ v *atomic.Int64 }

func (c fakeCounter) Inc(d uint64) { c.v.Add(int64(d)) }

type fakeGauge struct{ v *atomic.Int64 }

func (g fakeGauge) Add(d int64)  { g.v.Add(d) }
func (g fakeGauge) Set(v uint64) { g.v.Store(int64(v)) }
func (g fakeGauge) Get() uint64  { return uint64(g.v.Load()) }
