package debug

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

const testSecret = "s3cret-debug-token-0123"

func parse(t testing.TB, js string) (*Config, *fakeframework.Env) {
	t.Helper()
	return fakeframework.MustParse[*Config](t, Name, newConfig, js)
}
