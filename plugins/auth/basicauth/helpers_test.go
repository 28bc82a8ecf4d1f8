package basicauth

import (
	"encoding/json"
	"testing"

	"github.com/moeproxy/moe/plugins/auth/internal/authn/authntest"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
)

// parse decodes, validates and initialises a config like the framework does.
func parse(t testing.TB, js string, route bool) (*Config, *authntest.Env, error) {
	t.Helper()
	c := newConfig().(*Config)
	if err := config.DecodeStrict([]byte(js), c); err != nil {
		return nil, nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	env := authntest.NewEnv("basic-auth", route)
	if err := c.Init(env); err != nil {
		return nil, nil, err
	}
	return c, env, nil
}

func mustParse(t testing.TB, v any) (*Config, *authntest.Env) {
	t.Helper()
	b, _ := json.Marshal(v)
	c, env, err := parse(t, string(b), false)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return c, env
}

// run sends one request through the plugin.
func run(c *Config, req *authntest.Headers) (*authntest.Context, api.Status) {
	ctx := authntest.NewContext("basic-auth", req)
	st := (*filter)(c).OnReceive(ctx, req, nil, nil)
	return ctx, st
}
