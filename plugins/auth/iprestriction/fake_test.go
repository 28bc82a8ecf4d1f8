package iprestriction

// A minimal fake of the framework's per-request objects, enough for this
// plugin's OnReceive. Unused methods come from nil embedded interfaces and
// panic if called, which flags an unexpected dependency.

import (
	"context"
	"sync/atomic"
	"testing"

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
	consumer *api.Consumer
	reply    *fakeReply
	recv     *fakeRecv
	info     *fakeInfo
}

// newCtx builds a request context; the handlers are built once so that
// benchmarks measure the plugin, not the fake.
func newCtx(remote string) *fakeCtx {
	c := &fakeCtx{Context: context.Background(), remote: remote}
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
func (r *fakeRecv) RequestInfo() api.RequestInfo { return r.c.info }

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

// parse decodes a JSON config the way the framework does (defaults, strict
// decode, Validate, Init) but with metrics the test can read.
func parse(t testing.TB, raw string) (*Config, *fakeMetrics) {
	t.Helper()
	c := newConfig().(*Config)
	if err := config.DecodeStrict([]byte(raw), c); err != nil {
		t.Fatalf("config %s: %v", raw, err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("config %s: %v", raw, err)
	}
	m := &fakeMetrics{counts: map[string]*fakeCounter{}}
	if err := c.Init(fakeEnv{m}); err != nil {
		t.Fatalf("config %s: %v", raw, err)
	}
	return c, m
}

type fakeEnv struct{ m *fakeMetrics }

func (e fakeEnv) PluginName() string   { return Name }
func (e fakeEnv) IsRoute() bool        { return false }
func (e fakeEnv) Metrics() api.Metrics { return e.m }

type fakeMetrics struct {
	api.Metrics
	counts map[string]*fakeCounter
}

func (m *fakeMetrics) Counter(name string) api.Counter {
	if c, ok := m.counts[name]; ok {
		return c
	}
	c := &fakeCounter{}
	m.counts[name] = c
	return c
}

// get returns a counter's value (0 if never defined).
func (m *fakeMetrics) get(name string) uint64 {
	if c, ok := m.counts[name]; ok {
		return c.n.Load()
	}
	return 0
}

type fakeCounter struct{ n atomic.Uint64 }

func (c *fakeCounter) Inc(d uint64) { c.n.Add(d) }

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
