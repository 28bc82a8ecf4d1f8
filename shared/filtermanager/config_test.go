package filtermanager_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

type tagConfig struct {
	Tag string `json:"tag"`
}

func (c *tagConfig) Validate() error {
	if c.Tag == "" {
		return api.FieldErrorf("tag", "must not be empty")
	}
	return nil
}

func tagPlugin(t *testing.T, name string) {
	registry.Register(registry.Plugin{
		Name:      name,
		NewConfig: func() any { return &tagConfig{Tag: name} },
		Factory: registry.Typed(func(c *tagConfig) api.Filter {
			return recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
				appendHeader(h, "x-trace", c.Tag)
				return api.Continue
			}}
		}),
	})
	t.Cleanup(func() { registry.Unregister(name) })
}

func TestPerRouteConfigMergesByName(t *testing.T) {
	for _, n := range []string{"ma", "mb", "mc", "md"} {
		tagPlugin(t, n)
	}
	base, err := fakeenvoy.NewChain(`{"plugins":[{"name":"ma"},{"name":"mb","config":{"tag":"B"}},{"name":"mc","disabled":true}]}`)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ route, want string }{
		{``, "ma,B"},
		{`{"plugins":[{"name":"mb","disabled":true}]}`, "ma"},
		{`{"plugins":[{"name":"mc"}]}`, "ma,B,mc"},
		{`{"plugins":[{"name":"mb","config":{"tag":"B2"}},{"name":"md","config":{"tag":"D"}}]}`, "ma,B2,D"},
		{`{"plugins":[{"name":"md"},{"name":"ma"}]}`, "md,ma,B"},
	}
	for _, tc := range cases {
		r := base
		if tc.route != "" {
			if r, err = base.WithRoute(tc.route); err != nil {
				t.Fatalf("%s: %v", tc.route, err)
			}
		}
		res := r.Do(fakeenvoy.Request{})
		if got := strings.Join(res.Upstream.Headers["x-trace"], ""); got != tc.want {
			t.Errorf("route %s: trace %q, want %q", tc.route, got, tc.want)
		}
	}
}

func TestInvalidConfigIsRejectedAsAWhole(t *testing.T) {
	tagPlugin(t, "ra")
	tagPlugin(t, "rb")
	_, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"plugins":[{"name":"ra"},{"name":"rb","config":{"tag":""}}]}`)
	if err == nil || !strings.Contains(err.Error(), `plugin "rb": field tag: must not be empty`) {
		t.Errorf("error %v", err)
	}
	if _, err := fakeenvoy.ParseRoute(filtermanager.Parser{}, `{"plugins":[{"name":"rb","config":{"tga":"x"}}]}`); err == nil {
		t.Error("bad route config accepted")
	}
}

func TestEachPluginIsAlsoItsOwnFilter(t *testing.T) {
	tagPlugin(t, "solo")
	p, _ := registry.Get("solo")
	cfg, err := fakeenvoy.ParseFilter(filtermanager.PluginParser{Plugin: p}, `{"tag":"S"}`)
	if err != nil {
		t.Fatal(err)
	}
	res := do(t, cfg, fakeenvoy.Request{})
	if res.Upstream.Headers["x-trace"][0] != "S" {
		t.Errorf("trace %v", res.Upstream.Headers["x-trace"])
	}
	route, err := fakeenvoy.ParseRoute(filtermanager.PluginParser{Plugin: p}, `{"tag":"R"}`)
	if err != nil {
		t.Fatal(err)
	}
	res = do(t, filtermanager.PluginParser{Plugin: p}.Merge(cfg, route), fakeenvoy.Request{})
	if res.Upstream.Headers["x-trace"][0] != "R" {
		t.Errorf("route trace %v", res.Upstream.Headers["x-trace"])
	}
}

func TestPanicWhileParsingIsARejection(t *testing.T) {
	calls := 0
	registry.Register(registry.Plugin{Name: "parse-panic", NewConfig: func() any {
		if calls++; calls > 1 { // the registry's own check is the first call
			panic("bad")
		}
		return &tagConfig{}
	}, Factory: func(any) api.Filter { return nil }})
	t.Cleanup(func() { registry.Unregister("parse-panic") })
	if _, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"plugins":[{"name":"parse-panic"}]}`); err == nil {
		t.Error("accepted")
	}
}

// destroyCounting is a tag config that counts its Destroy calls.
type destroyCounting struct {
	tagConfig
	destroyed *atomic.Int32
}

func (d *destroyCounting) Destroy() { d.destroyed.Add(1) }

// Envoy destroys a merged route config on its own (a route table change, after
// a delay: go/pkg/http/config.go envoyGoFilterDestroyHttpPluginConfig). When a
// merge falls back to the parent's chain (a route config that cannot be merged,
// a panic), destroying the merged config must leave the parent's plugin
// configs alone: the parent keeps serving its other routes.
func TestDestroyingAFailedMergeKeepsTheParentsPlugins(t *testing.T) {
	registry.Register(registry.Plugin{Name: "needs-tag", NewConfig: func() any { return &tagConfig{} }, // no default tag
		Factory: func(any) api.Filter { return recvF{} }})
	t.Cleanup(func() { registry.Unregister("needs-tag") })
	var destroyed atomic.Int32
	registry.Register(registry.Plugin{Name: "counted",
		NewConfig: func() any { return &destroyCounting{destroyed: &destroyed} },
		Merge:     func(parent, child any) any { panic("merge bug") },
		Factory: registry.Typed(func(c *destroyCounting) api.Filter {
			return recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
				appendHeader(h, "x-trace", c.Tag)
				return api.Continue
			}}
		})})
	t.Cleanup(func() { registry.Unregister("counted") })
	cases := map[string]string{
		// Valid alone, but merging it needs needs-tag's config, which it lacks.
		"unmergeable route": `{"plugins":[{"name":"needs-tag"}]}`,
		// The plugin's own Merge panics.
		"panicking merge": `{"plugins":[{"name":"counted","config":{"tag":"R"}}]}`,
		// No route config the parser knows (nil): the parent's chain.
		"unknown route config": "",
	}
	for name, routeJSON := range cases {
		t.Run(name, func(t *testing.T) {
			destroyed.Store(0)
			parent, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"plugins":[{"name":"counted","config":{"tag":"P"}}]}`)
			if err != nil {
				t.Fatal(err)
			}
			var route any
			if routeJSON != "" {
				if route, err = fakeenvoy.ParseRoute(filtermanager.Parser{}, routeJSON); err != nil {
					t.Fatal(err)
				}
			}
			merged := filtermanager.Parser{}.Merge(parent, route)
			if got := do(t, merged, fakeenvoy.Request{}).Upstream.Headers["x-trace"]; len(got) != 1 || got[0] != "P" {
				t.Fatalf("a failed merge serves %v, want the parent's chain", got)
			}
			merged.(api.Destroyable).Destroy()
			if n := destroyed.Load(); n != 0 {
				t.Fatalf("destroying the failed merge destroyed the parent's plugin config (%d times)", n)
			}
			if got := do(t, parent, fakeenvoy.Request{}).Upstream.Headers["x-trace"]; len(got) != 1 || got[0] != "P" {
				t.Errorf("parent after the merge was destroyed serves %v", got)
			}
			parent.(api.Destroyable).Destroy()
			if n := destroyed.Load(); n != 1 {
				t.Errorf("destroying the parent destroyed its plugin config %d times, want 1", n)
			}
		})
	}
}
