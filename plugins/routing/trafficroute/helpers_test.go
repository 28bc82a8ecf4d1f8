package trafficroute

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// parse decodes, validates and initialises a config as the framework does.
func parse(t testing.TB, js string) (*Config, *fakeframework.Env) {
	t.Helper()
	return fakeframework.MustParse[*Config](t, Name, newConfig, js)
}
