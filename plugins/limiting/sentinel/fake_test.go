package sentinel

import (
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// The tests call the filter through the fake framework
// (shared/testing/fakeframework); these name what they need from it.

type fakeCtx = fakeframework.Context

type reply = fakeframework.Reply

// newCtx is a request on route with header key/value pairs.
func newCtx(route string, kv ...string) *fakeCtx {
	c := fakeframework.NewContext("sentinel", fakeframework.NewRequest("GET", "/", kv...))
	c.RouteName, c.Cluster = route, "upstream"
	return c
}

func resp(status int) *fakeframework.Response { return fakeframework.NewResponse(status) }

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
	if f.OnReceive(ctx, ctx.Req, nil, nil) == api.Stop {
		return ctx.Replied
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	if status > 0 {
		f.Append(ctx, resp(status), nil, nil)
	}
	return nil
}
