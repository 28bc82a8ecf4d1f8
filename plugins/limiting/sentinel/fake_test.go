package sentinel

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// A minimal stand-in for the framework's request context (shared/testing/fakeenvoy does
// not exist yet): request headers, a route name and a recorded local reply.

type fakeReq struct{ api.Headers }

func (r fakeReq) Method() string           { v, _ := r.Get(":method"); return v }
func (r fakeReq) Path() string             { v, _ := r.Get(":path"); return v }
func (r fakeReq) Host() string             { v, _ := r.Get(":authority"); return v }
func (r fakeReq) Scheme() string           { return "http" }
func (r fakeReq) SetMethod(v string) error { return r.Set(":method", v) }
func (r fakeReq) SetPath(v string) error   { return r.Set(":path", v) }
func (r fakeReq) SetHost(v string) error   { return r.Set(":authority", v) }

type fakeResp struct{ api.Headers }

func (r fakeResp) SetStatus(code int) error { return nil }

type fakeRoute string

func (r fakeRoute) RouteName() string   { return string(r) }
func (r fakeRoute) ClusterName() string { return "upstream" }

type reply struct {
	code    int
	headers api.HeaderMap
	body    string
}

type fakeCtx struct {
	context.Context
	req   fakeReq
	route fakeRoute
	mu    sync.Mutex
	reply *reply
}

func newCtx(route string, kv ...string) *fakeCtx {
	return &fakeCtx{Context: context.Background(), req: fakeReq{api.NewHeaders(append([]string{":method", "GET", ":path", "/"}, kv...)...)}, route: fakeRoute(route)}
}

func (c *fakeCtx) PluginName() string                  { return "sentinel" }
func (c *fakeCtx) RequestID() string                   { return "req" }
func (c *fakeCtx) Log() api.Logger                     { return nopLogger{} }
func (c *fakeCtx) Receiver() api.ReceiverFilterHandler { return (*fakeRecv)(c) }
func (c *fakeCtx) Sender() api.SenderFilterHandler     { return nil }
func (c *fakeCtx) Reply(code int, body string, h api.HeaderMap) api.Status {
	_ = c.Receiver().SendHijackReplyWithBody(code, h, body)
	return api.Stop
}
func (c *fakeCtx) Consumer() *api.Consumer     { return nil }
func (c *fakeCtx) SetConsumer(*api.Consumer)   {}
func (c *fakeCtx) GetState(string) (any, bool) { return nil, false }
func (c *fakeCtx) SetState(string, any)        {}
func (c *fakeCtx) Var(string) (string, bool)   { return "", false }
func (c *fakeCtx) replied() *reply             { c.mu.Lock(); defer c.mu.Unlock(); return c.reply }
func (c *fakeCtx) resetReply()                 { c.mu.Lock(); c.reply = nil; c.mu.Unlock() }

type nopLogger struct{}

func (nopLogger) Debugf(string, ...any) {}
func (nopLogger) Infof(string, ...any)  {}
func (nopLogger) Warnf(string, ...any)  {}
func (nopLogger) Errorf(string, ...any) {}

type fakeRecv fakeCtx

func (r *fakeRecv) SendHijackReply(code int, h api.HeaderMap) error {
	return r.SendHijackReplyWithBody(code, h, "")
}
func (r *fakeRecv) SendHijackReplyWithBody(code int, h api.HeaderMap, body string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reply = &reply{code: code, headers: h, body: body}
	return nil
}
func (r *fakeRecv) SendDirectResponse(api.HeaderMap, api.Buffer, api.HeaderMap) error { return nil }
func (r *fakeRecv) GetRequestHeaders() api.RequestHeaderMap                           { return r.req }
func (r *fakeRecv) SetRequestHeaders(api.HeaderMap) error                             { return nil }
func (r *fakeRecv) GetRequestData() api.Buffer                                        { return nil }
func (r *fakeRecv) SetRequestData(api.Buffer) error                                   { return nil }
func (r *fakeRecv) GetRequestTrailers() api.HeaderMap                                 { return nil }
func (r *fakeRecv) SetRequestTrailers(api.HeaderMap) error                            { return nil }
func (r *fakeRecv) RequestInfo() api.RequestInfo                                      { return nil }
func (r *fakeRecv) Route() api.RouteInfo                                              { return r.route }
func (r *fakeRecv) ClearRouteCache() error                                            { return nil }
func (r *fakeRecv) SetUpstreamOverrideHost(string, bool) error                        { return nil }

// load decodes, validates and initializes a config from JSON, like the
// framework does, and destroys it when the test ends.
func load(t testing.TB, raw string) (*Config, *fakeframework.Env) {
	t.Helper()
	c := newConfig().(*Config)
	if err := config.DecodeStrict([]byte(raw), c); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	m := fakeframework.NewEnv("sentinel", false)
	recorder.reset() // breaker states of an earlier run (-count) of the same namespace
	if err := c.Init(m); err != nil {
		t.Fatalf("init: %v", err)
	}
	t.Cleanup(c.Destroy)
	return c, m
}

// request runs one request through a new filter: OnReceive, then (when it was
// admitted) Append with status after delay, then OnDestroy. It returns the
// local reply, nil when admitted.
func request(c *Config, ctx *fakeCtx, status int, delay time.Duration) *reply {
	f := &filter{rt: c.rt}
	defer f.OnDestroy()
	if f.OnReceive(ctx, ctx.req, nil, nil) == api.Stop {
		return ctx.replied()
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	if status > 0 {
		f.Append(ctx, fakeResp{api.NewHeaders(":status", itoa(status))}, nil, nil)
	}
	return nil
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func (r fakeResp) Status() int { return r.Headers.Status() }
