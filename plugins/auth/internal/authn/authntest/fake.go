// Package authntest is a small in-memory stand-in for the framework's request
// objects, for unit tests and benchmarks of the auth plugins until (and next
// to) shared/fakehost: a Context, a request header map, a receiver handler that
// records the local reply, and metrics that can be read back.
package authntest

import (
	"context"
	"strings"
	"sync"

	"github.com/moeproxy/moe/shared/api"
)

// Headers is an api.RequestHeaderMap over api.Headers.
type Headers struct{ api.Headers }

// NewRequest builds request headers: method, path, then header key/value pairs.
func NewRequest(method, path string, kv ...string) *Headers {
	h := &Headers{api.Headers{":method": {method}, ":path": {path}, ":authority": {"example.com"}, ":scheme": {"http"}}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func (h *Headers) pseudo(k string) string { v, _ := h.Get(k); return v }
func (h *Headers) Method() string         { return h.pseudo(":method") }
func (h *Headers) Path() string           { return h.pseudo(":path") }
func (h *Headers) Host() string           { return h.pseudo(":authority") }
func (h *Headers) Scheme() string         { return h.pseudo(":scheme") }
func (h *Headers) SetMethod(v string) error {
	return h.Set(":method", v)
}
func (h *Headers) SetPath(v string) error { return h.Set(":path", v) }
func (h *Headers) SetHost(v string) error { return h.Set(":authority", v) }

// Reply is the local reply a plugin sent.
type Reply struct {
	Code    int
	Headers api.HeaderMap
	Body    string
}

// Context is a fake api.Context. Reset it between benchmark iterations.
type Context struct {
	context.Context
	Name     string
	Req      *Headers
	Body     api.Buffer
	Replied  *Reply
	consumer *api.Consumer
	state    map[string]any
}

// NewContext returns a context for plugin name over req.
func NewContext(name string, req *Headers) *Context {
	return &Context{Context: context.Background(), Name: name, Req: req}
}

// Reset clears the reply and consumer (for benchmarks reusing one context).
func (c *Context) Reset() {
	c.Replied = nil
	c.consumer = nil
}

func (c *Context) PluginName() string                  { return c.Name }
func (c *Context) RequestID() string                   { return "test-request" }
func (c *Context) Log() api.Logger                     { return nopLogger{} }
func (c *Context) Receiver() api.ReceiverFilterHandler { return (*recv)(c) }
func (c *Context) Sender() api.SenderFilterHandler     { return nil }
func (c *Context) Consumer() *api.Consumer             { return c.consumer }
func (c *Context) SetConsumer(cs *api.Consumer)        { c.consumer = cs }
func (c *Context) Var(string) (string, bool)           { return "", false }
func (c *Context) GetState(key string) (any, bool)     { v, ok := c.state[key]; return v, ok }
func (c *Context) SetState(key string, v any) {
	if c.state == nil {
		c.state = map[string]any{}
	}
	c.state[key] = v
}

type nopLogger struct{}

func (nopLogger) Debugf(string, ...any) {}
func (nopLogger) Infof(string, ...any)  {}
func (nopLogger) Warnf(string, ...any)  {}
func (nopLogger) Errorf(string, ...any) {}

type recv Context

func (r *recv) SendHijackReply(code int, h api.HeaderMap) error {
	return r.SendHijackReplyWithBody(code, h, "")
}
func (r *recv) SendHijackReplyWithBody(code int, h api.HeaderMap, body string) error {
	if r.Replied != nil {
		return &api.StreamError{Op: "reply", Err: api.ErrAlreadyReplied}
	}
	r.Replied = &Reply{Code: code, Headers: h, Body: body}
	return nil
}
func (r *recv) SendDirectResponse(h api.HeaderMap, body api.Buffer, _ api.HeaderMap) error {
	b := ""
	if body != nil {
		b = body.String()
	}
	code := 200
	if v, ok := h.Get(":status"); ok {
		code = 0
		for _, c := range v {
			code = code*10 + int(c-'0')
		}
	}
	return r.SendHijackReplyWithBody(code, h, b)
}
func (r *recv) GetRequestHeaders() api.RequestHeaderMap { return r.Req }
func (r *recv) SetRequestHeaders(api.HeaderMap) error   { return nil }
func (r *recv) GetRequestData() api.Buffer              { return r.Body }
func (r *recv) SetRequestData(b api.Buffer) error       { r.Body = b; return nil }
func (r *recv) GetRequestTrailers() api.HeaderMap       { return nil }
func (r *recv) SetRequestTrailers(api.HeaderMap) error  { return nil }
func (r *recv) RequestInfo() api.RequestInfo            { return nil }
func (r *recv) Route() api.RouteInfo                    { return nil }
func (r *recv) ClearRouteCache() error                  { return nil }
func (r *recv) SetUpstreamOverrideHost(string, bool) error {
	return nil
}

// Env is an api.ConfigEnv whose metrics can be read back with Count.
type Env struct {
	Plugin string
	Route  bool
	m      *Metrics
}

// NewEnv returns a ConfigEnv for plugin.
func NewEnv(plugin string, route bool) *Env {
	return &Env{Plugin: plugin, Route: route, m: &Metrics{c: map[string]*counter{}}}
}

func (e *Env) PluginName() string   { return e.Plugin }
func (e *Env) IsRoute() bool        { return e.Route }
func (e *Env) Metrics() api.Metrics { return e.m }

// Count returns the value of counter name (without prefix).
func (e *Env) Count(name string) uint64 { return e.m.get(name) }

// Metrics records counters in memory.
type Metrics struct {
	mu sync.Mutex
	c  map[string]*counter
}

type counter struct {
	mu sync.Mutex
	n  uint64
}

func (c *counter) Inc(d uint64) { c.mu.Lock(); c.n += d; c.mu.Unlock() }

func (m *Metrics) Counter(name string) api.Counter {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.c[name]
	if !ok {
		c = &counter{}
		m.c[name] = c
	}
	return c
}
func (m *Metrics) Gauge(string) api.Gauge                   { return nopGauge{} }
func (m *Metrics) Histogram(string, []uint64) api.Histogram { return nopHist{} }
func (m *Metrics) get(name string) uint64 {
	m.mu.Lock()
	c, ok := m.c[name]
	m.mu.Unlock()
	if !ok {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

type nopGauge struct{}

func (nopGauge) Add(int64)   {}
func (nopGauge) Set(uint64)  {}
func (nopGauge) Get() uint64 { return 0 }

type nopHist struct{}

func (nopHist) Record(uint64) {}

// ReplyHeader returns a header of the recorded reply.
func (r *Reply) Header(k string) string {
	if r == nil || r.Headers == nil {
		return ""
	}
	v, _ := r.Headers.Get(strings.ToLower(k))
	return v
}
