package cel

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func parse(t testing.TB, js string) (*Config, *fakeframework.Env) {
	t.Helper()
	return fakeframework.MustParse[*Config](t, Name, newConfig, js)
}

func state(ctx api.Context, key string) string {
	v, _ := ctx.GetState(key)
	s, _ := v.(string)
	return s
}
