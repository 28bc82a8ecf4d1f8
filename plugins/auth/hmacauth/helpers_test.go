package hmacauth

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/plugintest"
)

const plugin = "hmac-auth"

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

// runBody sends a request with a body.
func runBody(c *Config, req *plugintest.Request, body string) (*plugintest.Context, api.Status) {
	var b api.Buffer
	if body != "" {
		b = api.NewBufferString(body)
	}
	return plugintest.Run(plugin, (*filter)(c), req, b)
}
