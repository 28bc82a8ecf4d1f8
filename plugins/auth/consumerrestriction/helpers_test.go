package consumerrestriction

import (
	"testing"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/plugins/auth/internal/authn/authntest"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/registry"
)

// parse decodes a config as the framework does (defaults, strict decode,
// Validate) and runs Init with metrics the test can read.
func parse(t testing.TB, raw string) (*Config, *authntest.Env) {
	t.Helper()
	c := newConfig().(*Config)
	if err := config.DecodeStrict([]byte(raw), c); err != nil {
		t.Fatalf("config %s: %v", raw, err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("config %s: %v", raw, err)
	}
	env := authntest.NewEnv(Name, false)
	if err := c.Init(env); err != nil {
		t.Fatal(err)
	}
	return c, env
}

// tryParse goes through the framework's decoder for error messages.
func tryParse(raw string) error {
	p, _ := registry.Get(Name)
	_, err := config.DecodePlugin(p, []byte(raw), false)
	return err
}

func filterOf(c *Config) api.ReceiverFilter {
	p, _ := registry.Get(Name)
	return p.Factory(c).(api.ReceiverFilter)
}

var (
	alice = &api.Consumer{Name: "alice", Group: "admins"}
	bob   = &api.Consumer{Name: "bob", Group: "users"}
	carol = &api.Consumer{Name: "carol"}
	anon  = authn.NewAnonymous("anonymous")
)
