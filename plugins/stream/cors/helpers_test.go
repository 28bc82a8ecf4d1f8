package cors

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func parse(t testing.TB, js string) (*Config, *fakeframework.Env) {
	t.Helper()
	return fakeframework.MustParse[*Config](t, Name, newConfig, js)
}

// preflight is a request as a browser sends it before a non-simple fetch.
func preflight(origin, method, headers string) *fakeframework.Request {
	kv := []string{"origin", origin, "access-control-request-method", method}
	if headers != "" {
		kv = append(kv, "access-control-request-headers", headers)
	}
	return fakeframework.NewRequest("OPTIONS", "/api", kv...)
}
