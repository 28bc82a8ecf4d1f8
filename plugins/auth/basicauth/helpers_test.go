package basicauth

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/plugintest"
)

const plugin = "basic-auth"

// parse decodes, validates and initialises a config like the framework does.
func parse(t testing.TB, js string, route bool) (*Config, *plugintest.Env, error) {
	t.Helper()
	return plugintest.Parse[*Config](t, plugin, newConfig, js, route)
}

func mustParse(t testing.TB, v any) (*Config, *plugintest.Env) {
	t.Helper()
	return plugintest.MustParse[*Config](t, plugin, newConfig, v)
}

// run sends one request through the plugin.
func run(c *Config, req *plugintest.Request) (*plugintest.Context, api.Status) {
	return plugintest.Run(plugin, (*filter)(c), req, nil)
}
