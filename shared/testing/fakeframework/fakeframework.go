// Package fakeframework fakes the moe framework for tests that call one plugin's filter
// methods directly: a Context (api.Context) over request and response header maps, the
// receiver and sender handlers recording the local reply, route cache clears and override
// hosts, and a config Env whose metrics can be read back. Variables ($header_x, $arg_x, ...)
// resolve against it as in the framework. What it cannot answer as the framework would
// (replacing whole header maps, response trailers) panics with a message: test that through
// shared/testing/fakeenvoy, which fakes Envoy and runs the real framework.
package fakeframework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/variables"
)

// Request is an api.RequestHeaderMap over api.Headers; pseudo-headers live in the map.
type Request struct{ api.Headers }

// NewRequest builds request headers: method, path, then header key/value pairs.
func NewRequest(method, path string, kv ...string) *Request {
	h := &Request{api.Headers{":method": {method}, ":path": {path}, ":authority": {"example.com"}, ":scheme": {"http"}}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func (h *Request) pseudo(k string) string { v, _ := h.Get(k); return v }
func (h *Request) Method() string         { return h.pseudo(":method") }
func (h *Request) Path() string           { return h.pseudo(":path") }
func (h *Request) Host() string           { return h.pseudo(":authority") }
func (h *Request) Scheme() string         { return h.pseudo(":scheme") }
func (h *Request) SetMethod(v string) error {
	return h.Set(":method", v)
}
func (h *Request) SetPath(v string) error { return h.Set(":path", v) }
func (h *Request) SetHost(v string) error { return h.Set(":authority", v) }

// Reply is the local reply a plugin sent.
type Reply struct {
	Code    int
	Headers api.HeaderMap
	Body    string
}

// Header returns a header of the recorded reply ("" for none or a nil reply).
func (r *Reply) Header(k string) string {
	if r == nil || r.Headers == nil {
		return ""
	}
	v, _ := r.Headers.Get(strings.ToLower(k))
	return v
}

// Context is a fake api.Context for plugin Name over request Req (and, for
// response-side tests, response Resp). A second local reply fails with
// api.ErrAlreadyReplied, as in the framework; set Replied to nil (or Reset)
// before reusing a context. Calls it cannot answer the way the framework would
// panic with a message saying so: use shared/testing/fakeenvoy, which runs the
// real framework, for those.
type Context struct {
	context.Context
	Name string
	Req  *Request
	Body api.Buffer
	// Trailers are the request trailers (GetRequestTrailers).
	Trailers api.HeaderMap
	// Resp, RespBody are what Sender() serves (nil: no response yet).
	Resp     *Response
	RespBody api.Buffer
	Replied  *Reply
	// Remote is the downstream remote address ("ip:port").
	Remote string
	// RouteName and Cluster are what Route() answers.
	RouteName, Cluster string
	// Properties answer RequestInfo().GetProperty.
	Properties map[string]string
	// OverrideHost and RouteCleared record SetUpstreamOverrideHost and
	// ClearRouteCache.
	OverrideHost string
	RouteCleared int
	// Recorded are the plugin's Decide calls (what Decisions returns);
	// Tracing says TraceCalls was called.
	Recorded []api.Decision
	Tracing  bool

	info     info  // what Receiver().RequestInfo() points to
	rt       route // what Route() points to
	consumer *api.Consumer
	state    map[string]any
}

// NewContext returns a context for plugin name over req.
func NewContext(name string, req *Request) *Context {
	c := &Context{Context: context.Background(), Name: name, Req: req}
	c.info.c, c.rt.c = c, c
	return c
}

// From sets the downstream remote address (Remote) and returns c.
func (c *Context) From(remote string) *Context {
	c.Remote = remote
	return c
}

// WithResponse sets the response Sender() serves and returns c.
func (c *Context) WithResponse(resp *Response) *Context {
	c.Resp = resp
	return c
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
func (c *Context) Sender() api.SenderFilterHandler     { return (*send)(c) }
func (c *Context) Reply(code int, body string, h api.HeaderMap) api.Status {
	_ = (*recv)(c).SendHijackReplyWithBody(code, h, body)
	return api.Stop
}
func (c *Context) Consumer() *api.Consumer { return c.consumer }
func (c *Context) Decide(allowed bool, reason string) {
	c.Recorded = append(c.Recorded, api.Decision{Plugin: c.Name, Allowed: allowed, Reason: reason})
}
func (c *Context) Decisions() []api.Decision       { return c.Recorded }
func (c *Context) TraceCalls()                     { c.Tracing = true }
func (c *Context) Calls() []api.PluginCall         { return nil }
func (c *Context) SetConsumer(cs *api.Consumer)    { c.consumer = cs }
func (c *Context) Var(name string) (string, bool)  { return variables.Lookup(c, name) }
func (c *Context) GetState(key string) (any, bool) { v, ok := c.state[key]; return v, ok }
func (c *Context) SetState(key string, v any) {
	if c.state == nil {
		c.state = map[string]any{}
	}
	c.state[key] = v
}

var _ api.Context = (*Context)(nil)

type nopLogger struct{}

func (nopLogger) Debugf(string, ...any) {}
func (nopLogger) Infof(string, ...any)  {}
func (nopLogger) Warnf(string, ...any)  {}
func (nopLogger) Errorf(string, ...any) {}

// notImplemented panics: the fake cannot answer as the framework would.
func notImplemented(what string) {
	panic("fakeframework: " + what + " is not implemented; test this through shared/testing/fakeenvoy, which runs the real framework")
}

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
	if h != nil {
		if v, ok := h.Get(":status"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("fakeframework: :status %q is not a number", v)
			}
			code = n
		}
	}
	return r.SendHijackReplyWithBody(code, h, b)
}
func (r *recv) GetRequestHeaders() api.RequestHeaderMap {
	if r.Req == nil {
		return nil
	}
	return r.Req
}
func (r *recv) SetRequestHeaders(api.HeaderMap) error {
	notImplemented("SetRequestHeaders")
	return nil
}
func (r *recv) GetRequestData() api.Buffer               { return r.Body }
func (r *recv) SetRequestData(b api.Buffer) error        { r.Body = b; return nil }
func (r *recv) GetRequestTrailers() api.HeaderMap        { return r.Trailers }
func (r *recv) SetRequestTrailers(t api.HeaderMap) error { r.Trailers = t; return nil }
func (r *recv) RequestInfo() api.RequestInfo {
	// Point into the context: returning a struct would allocate on every call
	// and show up in the plugins' allocation counts.
	return &r.info
}
func (r *recv) Route() api.RouteInfo { return &r.rt }
func (r *recv) ClearRouteCache() error {
	r.RouteCleared++
	return nil
}
func (r *recv) SetUpstreamOverrideHost(host string, _ bool) error {
	r.OverrideHost = host
	return nil
}

type send Context

func (s *send) GetResponseHeaders() api.ResponseHeaderMap {
	if s.Resp == nil {
		return nil
	}
	return s.Resp
}
func (s *send) SetResponseHeaders(api.HeaderMap) error {
	notImplemented("SetResponseHeaders")
	return nil
}
func (s *send) GetResponseData() api.Buffer        { return s.RespBody }
func (s *send) SetResponseData(b api.Buffer) error { s.RespBody = b; return nil }
func (s *send) GetResponseTrailers() api.HeaderMap { notImplemented("GetResponseTrailers"); return nil }
func (s *send) SetResponseTrailers(api.HeaderMap) error {
	notImplemented("SetResponseTrailers")
	return nil
}
func (s *send) GetRequestHeaders() api.RequestHeaderMap { return (*recv)(s).GetRequestHeaders() }
func (s *send) RequestInfo() api.RequestInfo            { return &s.info }
func (s *send) Route() api.RouteInfo                    { return &s.rt }
func (s *send) SendHijackReply(code int, h api.HeaderMap) error {
	return (*recv)(s).SendHijackReplyWithBody(code, h, "")
}
func (s *send) SendHijackReplyWithBody(code int, h api.HeaderMap, body string) error {
	return (*recv)(s).SendHijackReplyWithBody(code, h, body)
}

// route is the RouteInfo of a Context.
type route struct{ c *Context }

func (r *route) RouteName() string   { return r.c.RouteName }
func (r *route) ClusterName() string { return r.c.Cluster }

// info is the RequestInfo of a Context.
type info struct{ c *Context }

func (i *info) StartTime() time.Time            { return time.Time{} }
func (i *info) Duration() time.Duration         { return 0 }
func (i *info) Protocol() string                { return "HTTP/1.1" }
func (i *info) DownstreamRemoteAddress() string { return i.c.Remote }
func (i *info) DownstreamLocalAddress() string  { return "127.0.0.1:10000" }
func (i *info) UpstreamHost() string            { return "" }
func (i *info) UpstreamCluster() string         { return i.c.Cluster }
func (i *info) ResponseCode() int {
	if i.c.Resp == nil {
		return 0
	}
	return i.c.Resp.Status()
}
func (i *info) GetProperty(key string) (string, error) {
	if v, ok := i.c.Properties[key]; ok {
		return v, nil
	}
	return "", fmt.Errorf("fakeframework: property %q not set in Context.Properties", key)
}

// Response is an api.ResponseHeaderMap over api.Headers (":status" in the map).
type Response struct{ api.Headers }

// NewResponse builds response headers: the status, then header key/value pairs.
func NewResponse(status int, kv ...string) *Response {
	r := &Response{api.Headers{":status": {strconv.Itoa(status)}}}
	for i := 0; i+1 < len(kv); i += 2 {
		r.Add(kv[i], kv[i+1])
	}
	return r
}

func (r *Response) SetStatus(code int) error { return r.Set(":status", strconv.Itoa(code)) }

// Env is an api.ConfigEnv whose metrics can be read back with Count and Value.
type Env struct {
	Plugin string
	Route  bool
	// ChainConsumers are what Consumers returns: the chain-level consumers with
	// a credential for the plugin.
	ChainConsumers []api.ConsumerCredential
	// Checking is what CheckOnly returns: Init runs for moectl validate.
	Checking bool
	m        *metrics
}

// NewEnv returns a ConfigEnv for plugin.
func NewEnv(plugin string, route bool) *Env {
	return &Env{Plugin: plugin, Route: route, m: &metrics{v: map[string]*atomic.Int64{}}}
}

func (e *Env) PluginName() string   { return e.Plugin }
func (e *Env) IsRoute() bool        { return e.Route }
func (e *Env) Metrics() api.Metrics { return e.m }
func (e *Env) Log() api.Logger      { return nopLogger{} }

// CheckOnly says whether Init runs for a config check only (set Checking).
func (e *Env) CheckOnly() bool { return e.Checking }

// Consumers are the chain-level consumers handed to Init (set ChainConsumers).
func (e *Env) Consumers() []api.ConsumerCredential { return e.ChainConsumers }

// Count returns the value of counter name (without prefix), 0 if never defined.
func (e *Env) Count(name string) uint64 { return uint64(e.m.get(name).Load()) }

// Value returns the value of counter or gauge name (without prefix), 0 if never defined.
func (e *Env) Value(name string) int64 { return e.m.get(name).Load() }

// Values returns every counter and gauge defined so far, by name (for failure messages).
func (e *Env) Values() map[string]int64 {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	out := make(map[string]int64, len(e.m.v))
	for k, v := range e.m.v {
		out[k] = v.Load()
	}
	return out
}

// metrics keeps counters and gauges in memory by name; histograms are dropped.
type metrics struct {
	mu sync.Mutex
	v  map[string]*atomic.Int64
}

func (m *metrics) get(name string) *atomic.Int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.v[name]
	if !ok {
		v = &atomic.Int64{}
		m.v[name] = v
	}
	return v
}

func (m *metrics) Counter(name string) api.Counter          { return counter{m.get(name)} }
func (m *metrics) Gauge(name string) api.Gauge              { return gauge{m.get(name)} }
func (m *metrics) Histogram(string, []uint64) api.Histogram { return nopHist{} }

type counter struct{ v *atomic.Int64 }

func (c counter) Inc(d uint64) { c.v.Add(int64(d)) }

type gauge struct{ v *atomic.Int64 }

func (g gauge) Add(d int64)  { g.v.Add(d) }
func (g gauge) Set(v uint64) { g.v.Store(int64(v)) }
func (g gauge) Get() uint64  { return uint64(g.v.Load()) }

type nopHist struct{}

func (nopHist) Record(uint64) {}

// Config is what a plugin config with validation and initialisation implements.
type Config interface {
	Validate() error
	Init(api.ConfigEnv) error
}

// Parse decodes js into newConfig() (strictly, like the framework), validates and
// initialises it with an Env for plugin whose metrics the test can read.
func Parse[C Config](t testing.TB, plugin string, newConfig func() any, js string, route bool) (C, *Env, error) {
	t.Helper()
	return parse[C](plugin, newConfig, js, route, false)
}

func parse[C Config](plugin string, newConfig func() any, js string, route, checking bool) (C, *Env, error) {
	var zero C
	c := newConfig().(C)
	if err := config.DecodeStrict([]byte(js), c); err != nil {
		return zero, nil, err
	}
	if err := c.Validate(); err != nil {
		return zero, nil, err
	}
	env := NewEnv(plugin, route)
	env.Checking = checking
	if err := c.Init(env); err != nil {
		return zero, nil, err
	}
	return c, env, nil
}

// MustParse is Parse of a filter-level config, given as a JSON string or as a value
// marshalled to JSON; it fails the test on error.
func MustParse[C Config](t testing.TB, plugin string, newConfig func() any, cfg any) (C, *Env) {
	t.Helper()
	raw, ok := cfg.(string)
	if !ok {
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("config %v: %v", cfg, err)
		}
		raw = string(b)
	}
	c, env, err := Parse[C](t, plugin, newConfig, raw, false)
	if err != nil {
		t.Fatalf("config %s: %v", raw, err)
	}
	return c, env
}

// Run sends one request, with body (nil for none), through f in a new Context for plugin.
func Run(plugin string, f api.ReceiverFilter, req *Request, body api.Buffer) (*Context, api.Status) {
	ctx := NewContext(plugin, req)
	st := f.OnReceive(ctx, req, body, nil)
	return ctx, st
}

// RunSend runs f's response hook on resp (body nil for none) for request req in a new
// Context for plugin.
func RunSend(plugin string, f api.SenderFilter, req *Request, resp *Response, body api.Buffer) (*Context, api.Status) {
	ctx := NewContext(plugin, req).WithResponse(resp)
	ctx.RespBody = body
	st := f.Append(ctx, resp, body, nil)
	return ctx, st
}

// Bench runs f on req b.N times in one Context for plugin (Reset before each run), failing
// the benchmark if a run does not return want.
func Bench(b *testing.B, plugin string, f api.ReceiverFilter, req *Request, want api.Status) {
	b.Helper()
	ctx := NewContext(plugin, req)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx.Reset()
		if st := f.OnReceive(ctx, req, nil, nil); st != want {
			b.Fatalf("status %v %+v", st, ctx.Replied)
		}
	}
}

// WantConfigError decodes raw as plugin's filter-level config the way the framework does
// (registry, config.DecodePlugin) and fails the test unless that gives a *config.Error naming
// plugin, field and a reason containing reason.
func WantConfigError(t testing.TB, plugin, raw, field, reason string) {
	t.Helper()
	p, _ := registry.Get(plugin)
	_, err := config.DecodePlugin(p, []byte(raw), false)
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *config.Error, got %v", err)
	}
	if ce.Plugin != plugin || ce.Field != field || !strings.Contains(ce.Reason, reason) {
		t.Fatalf("got plugin=%q field=%q reason=%q; want %q %q ~%q", ce.Plugin, ce.Field, ce.Reason, plugin, field, reason)
	}
}

// ReceiverFilter is the registered plugin's filter for cfg, as the framework builds it.
func ReceiverFilter(plugin string, cfg any) api.ReceiverFilter {
	p, _ := registry.Get(plugin)
	return p.Factory(cfg).(api.ReceiverFilter)
}
