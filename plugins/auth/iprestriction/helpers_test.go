package iprestriction

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/plugintest"
)

// newCtx builds a request context for req from the downstream address remote.
func newCtx(remote string, req *plugintest.Request) *plugintest.Context {
	return plugintest.NewContext(Name, req).From(remote)
}

func newReq(kv ...string) *plugintest.Request { return plugintest.NewRequest("GET", "/", kv...) }

// parse decodes a JSON config the way the framework does (defaults, strict
// decode, Validate, Init) but with metrics the test can read.
func parse(t testing.TB, raw string) (*Config, *plugintest.Env) {
	t.Helper()
	return plugintest.MustParse[*Config](t, Name, newConfig, raw)
}

func filterOf(c *Config) api.ReceiverFilter { return plugintest.ReceiverFilter(Name, c) }
