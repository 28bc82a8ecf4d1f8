package consumerrestriction

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// parse decodes a config as the framework does (defaults, strict decode,
// Validate) and runs Init with metrics the test can read.
func parse(t testing.TB, raw string) (*Config, *fakeframework.Env) {
	t.Helper()
	return fakeframework.MustParse[*Config](t, Name, newConfig, raw)
}

func filterOf(c *Config) api.ReceiverFilter { return fakeframework.ReceiverFilter(Name, c) }

var (
	alice = &api.Consumer{Name: "alice", Group: "admins"}
	bob   = &api.Consumer{Name: "bob", Group: "users"}
	carol = &api.Consumer{Name: "carol"}
	anon  = consumer.NewAnonymous("anonymous")
)
