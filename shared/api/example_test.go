package api_test

import (
	"fmt"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/variables"
)

// The plugin of shared/README.md.
type Config struct {
	Header string              `json:"header"`
	Status int                 `json:"status"`
	Stamp  *variables.Template `json:"stamp"`

	denied api.Counter
}

func (c *Config) Validate() error {
	if c.Header == "" {
		return api.FieldErrorf("header", "is required")
	}
	if c.Status < 400 || c.Status > 599 {
		return api.FieldErrorf("status", "must be 4xx or 5xx, got %d", c.Status)
	}
	return nil
}

func (c *Config) Init(env api.ConfigEnv) error {
	c.denied = env.Metrics().Counter("denied_total")
	return nil
}

type filter struct{ cfg *Config }

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if _, ok := h.Get(f.cfg.Header); !ok {
		f.cfg.denied.Inc(1)
		ctx.Receiver().SendHijackReplyWithBody(f.cfg.Status, nil, "missing "+f.cfg.Header)
		return api.Stop
	}
	if f.cfg.Stamp != nil {
		h.Set("x-stamp", f.cfg.Stamp.Render(ctx))
	}
	return api.Continue
}

func init() {
	registry.Register(registry.Plugin{
		Name:      "header-guard",
		NewConfig: func() any { return &Config{Status: 403} },
		Factory:   registry.Typed(func(c *Config) api.Filter { return &filter{cfg: c} }),
	})
}

func Example() {
	r, err := fakeenvoy.NewPlugin("header-guard", `{"header": "x-tenant", "stamp": "$route_name:$header_x-tenant"}`)
	if err != nil {
		panic(err)
	}
	ok := r.Do(fakeenvoy.Request{Headers: [][2]string{{"x-tenant", "t1"}}, RouteName: "r1"})
	fmt.Println(ok.Status, ok.Upstream.Headers["x-stamp"])

	before := fakeenvoy.Stats.Counter("moe_header_guard_denied_total")
	denied := r.Do(fakeenvoy.Request{})
	fmt.Println(denied.Status, denied.Body, fakeenvoy.Stats.Counter("moe_header_guard_denied_total")-before)

	_, err = fakeenvoy.NewPlugin("header-guard", `{"header": "x-tenant", "status": 200}`)
	fmt.Println(err)

	_, err = fakeenvoy.NewPlugin("header-guard", `{"header": "x-tenant", "stamp": "$nope"}`)
	fmt.Println(err != nil)
	// Output:
	// 200 [r1:t1]
	// 403 missing x-tenant 1
	// invalid config of plugin "header-guard": field status: must be 4xx or 5xx, got 200
	// true
}
