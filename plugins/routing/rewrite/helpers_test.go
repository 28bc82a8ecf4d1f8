package rewrite

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func parse(t testing.TB, js string) (*Config, *fakeframework.Env) {
	t.Helper()
	return fakeframework.MustParse[*Config](t, Name, newConfig, js)
}

// run rewrites one request and returns its :path, :authority and the reply.
func run(t *testing.T, c *Config, path string, kv ...string) (string, string, *fakeframework.Context) {
	t.Helper()
	req := fakeframework.NewRequest("GET", path, kv...) // :authority example.com
	ctx, _ := fakeframework.Run(Name, (*filter)(c), req, nil)
	return req.Path(), req.Host(), ctx
}
