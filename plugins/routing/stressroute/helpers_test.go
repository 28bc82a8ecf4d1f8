package stressroute

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func parse(t testing.TB, js string) (*Config, *fakeframework.Env) {
	t.Helper()
	return fakeframework.MustParse[*Config](t, Name, newConfig, js)
}
