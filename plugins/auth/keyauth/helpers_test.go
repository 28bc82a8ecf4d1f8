package keyauth

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

const plugin = "key-auth"

// parse decodes, validates and initialises a config like the framework does.
func parse(t testing.TB, js string, route bool) (*Config, *fakeframework.Env, error) {
	t.Helper()
	return fakeframework.Parse[*Config](t, plugin, newConfig, js, route)
}

func mustParse(t testing.TB, v any) (*Config, *fakeframework.Env) {
	t.Helper()
	return fakeframework.MustParse[*Config](t, plugin, newConfig, v)
}

// run sends one request through the plugin.
func run(c *Config, req *fakeframework.Request) (*fakeframework.Context, api.Status) {
	return fakeframework.Run(plugin, (*filter)(c), req, nil)
}
