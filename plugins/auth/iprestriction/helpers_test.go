package iprestriction

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// newCtx builds a request context for req from the downstream address remote.
func newCtx(remote string, req *fakeframework.Request) *fakeframework.Context {
	return fakeframework.NewContext(Name, req).From(remote)
}

func newReq(kv ...string) *fakeframework.Request { return fakeframework.NewRequest("GET", "/", kv...) }

// parse decodes a JSON config the way the framework does (defaults, strict
// decode, Validate, Init) but with metrics the test can read.
func parse(t testing.TB, raw string) (*Config, *fakeframework.Env) {
	t.Helper()
	return fakeframework.MustParse[*Config](t, Name, newConfig, raw)
}

func filterOf(c *Config) api.ReceiverFilter { return fakeframework.ReceiverFilter(Name, c) }
