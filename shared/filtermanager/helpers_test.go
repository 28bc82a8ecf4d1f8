package filtermanager_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

type recvFn func(ctx api.Context, h api.RequestHeaderMap, body api.Buffer, tr api.HeaderMap) api.Status
type sendFn func(ctx api.Context, h api.ResponseHeaderMap, body api.Buffer, tr api.HeaderMap) api.Status

type recvF struct{ fn recvFn }

func (f recvF) OnReceive(ctx api.Context, h api.RequestHeaderMap, b api.Buffer, t api.HeaderMap) api.Status {
	return f.fn(ctx, h, b, t)
}

type sendF struct{ fn sendFn }

func (f sendF) Append(ctx api.Context, h api.ResponseHeaderMap, b api.Buffer, t api.HeaderMap) api.Status {
	return f.fn(ctx, h, b, t)
}

type bothF struct {
	recvF
	sendF
}

type logF struct {
	fn func(ctx api.Context, req api.RequestHeaderMap, resp api.ResponseHeaderMap, info api.RequestInfo)
}

func (f logF) Log(ctx api.Context, req api.RequestHeaderMap, resp api.ResponseHeaderMap, info api.RequestInfo) {
	f.fn(ctx, req, resp, info)
}

type destroyF struct{ fn func() }

func (f destroyF) OnDestroy() { f.fn() }

// fullF implements every hook.
type fullF struct {
	recvF
	sendF
	logF
	destroyF
}

type dataF struct {
	recvF
	data func(ctx api.Context, chunk api.Buffer, end bool) api.Status
}

func (f dataF) OnReceiveData(ctx api.Context, chunk api.Buffer, end bool) api.Status {
	return f.data(ctx, chunk, end)
}

var seq atomic.Int64

// plugin registers a test plugin whose factory returns f (or newF() per
// request) and returns its unique name.
func plugin(t testing.TB, needs api.Needs, f any) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%s", seq.Add(1), strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	factory := func(any) api.Filter { return f }
	if nf, ok := f.(func() any); ok {
		factory = func(any) api.Filter { return nf() }
	}
	registry.Register(registry.Plugin{Name: name, Factory: factory, Needs: needs})
	t.Cleanup(func() { registry.Unregister(name) })
	return name
}

func chainJSON(names ...string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf(`{"name":%q}`, n)
	}
	return `{"plugins":[` + strings.Join(parts, ",") + `]}`
}

func mustChain(t testing.TB, names ...string) any {
	t.Helper()
	cfg, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, chainJSON(names...))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return cfg
}

func do(t testing.TB, cfg any, req fakeenvoy.Request) *fakeenvoy.Result {
	t.Helper()
	res := fakeenvoy.Do(filtermanager.Factory, cfg, req)
	if len(res.Violations) > 0 {
		t.Errorf("SDK violations: %q", res.Violations)
	}
	return res
}

func appendHeader(h api.HeaderMap, k, v string) {
	old, _ := h.Get(k)
	if old != "" {
		v = old + "," + v
	}
	_ = h.Set(k, v)
}
