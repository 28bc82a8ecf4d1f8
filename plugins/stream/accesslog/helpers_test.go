package accesslog

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func parse(t testing.TB, js string) (*Config, *fakeframework.Env) {
	t.Helper()
	c, env := fakeframework.MustParse[*Config](t, Name, newConfig, js)
	t.Cleanup(c.Destroy)
	return c, env
}
