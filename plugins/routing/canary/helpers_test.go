package canary

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func parse(t testing.TB, js string) (*Config, *fakeframework.Env) {
	t.Helper()
	return fakeframework.MustParse[*Config](t, Name, newConfig, js)
}

// run sends one request with headers kv through the filter; it returns the
// context (for the state and the recorded calls) and the request headers.
func run(t testing.TB, c *Config, kv ...string) (*fakeframework.Context, *fakeframework.Request) {
	t.Helper()
	req := fakeframework.NewRequest("GET", "/", kv...)
	ctx, st := fakeframework.Run(Name, (*filter)(c), req, nil)
	if st != api.Continue {
		t.Fatalf("OnReceive: %v", st)
	}
	return ctx, req
}

func targetOf(t testing.TB, ctx *fakeframework.Context) string {
	t.Helper()
	v, _ := ctx.GetState(StateTarget)
	s, _ := v.(string)
	return s
}
