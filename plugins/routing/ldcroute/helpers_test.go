package ldcroute

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// parse decodes, validates and initialises a config as the framework does,
// and destroys it when the test ends (which stops its admin server).
func parse(t testing.TB, js string) (*Config, *fakeframework.Env) {
	t.Helper()
	c, env := fakeframework.MustParse[*Config](t, Name, newConfig, js)
	t.Cleanup(c.Destroy)
	return c, env
}

// run sends a request with headers kv; it returns the context, the request
// headers and the status.
func run(t testing.TB, c *Config, kv ...string) (*fakeframework.Context, *fakeframework.Request, api.Status) {
	t.Helper()
	req := fakeframework.NewRequest("GET", "/", kv...)
	ctx, st := fakeframework.Run(Name, (*filter)(c), req, nil)
	return ctx, req, st
}

func unitOf(ctx *fakeframework.Context) string {
	v, _ := ctx.GetState(StateUnit)
	s, _ := v.(string)
	return s
}

// threeUnits is the README's table: uid % 100 in 0-29 -> RZ01, 30-59 -> RZ02,
// 60-99 -> RZ03, each falling back to the next ones.
const threeUnits = `
  "uid": ["$header_x-uid", "$cookie_uid"],
  "default_unit": "RZ01",
  "units": [
    {"name": "RZ01", "cluster": "rz01", "slots": ["0-29"], "fallback": ["RZ02", "RZ03"]},
    {"name": "RZ02", "cluster": "rz02", "slots": ["30-59"], "fallback": ["RZ03", "RZ01"]},
    {"name": "RZ03", "cluster": "rz03", "slots": ["60-99"], "fallback": ["RZ01", "RZ02"]}
  ]`
