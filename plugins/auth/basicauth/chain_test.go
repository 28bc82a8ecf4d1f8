package basicauth

import (
	"testing"

	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// bcrypt (cost 4) of "alice-pw", so the framework runs the phase async.
const chainJSON = `{"plugins":[{"name":"basic-auth","config":{"hide_credentials":true,"consumers":[
	{"name":"alice","password_hash":"$2a$04$fn2iOgxkc7EnV4SjTHfNMeBPnBFOHvrfjAo/ARmi1rlpsqanghwXe"},
	{"name":"bob","password":"bob-pw"}]}}]}`

func TestThroughFramework(t *testing.T) {
	cfg := fakeenvoy.MustParseChain(t, chainJSON)
	for _, tc := range []struct {
		auth   string
		status int
		user   string
	}{
		{basic("alice:alice-pw"), 200, "alice"},
		{basic("bob:bob-pw"), 200, "bob"},
		{basic("alice:wrong"), 401, ""},
		{"", 401, ""},
	} {
		req := fakeenvoy.Request{}
		if tc.auth != "" {
			req.Headers = [][2]string{{"authorization", tc.auth}}
		}
		res := fakeenvoy.Do(filtermanager.Factory, cfg, req)
		if res.Status != tc.status || len(res.Violations) > 0 {
			t.Fatalf("%q: status %d violations %v body %q", tc.auth, res.Status, res.Violations, res.Body)
		}
		if tc.status == 200 {
			if got := res.Upstream.Headers["x-consumer-name"]; len(got) != 1 || got[0] != tc.user {
				t.Fatalf("consumer header %v", got)
			}
			if _, ok := res.Upstream.Headers["authorization"]; ok {
				t.Fatal("credentials reached the upstream")
			}
		} else if v := res.Headers["www-authenticate"]; len(v) != 1 || v[0] != `Basic realm="moe", charset="UTF-8"` {
			t.Fatalf("challenge %v", v)
		}
	}
}

func BenchmarkChain(b *testing.B) {
	b.Run("baseline-passthrough", fakeenvoy.BenchPassThrough)
	plain := fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"basic-auth","config":{"consumers":[{"name":"bob","password":"bob-pw"}]}}]}`)
	b.Run("basic-auth-plain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, plain, [2]string{"authorization", basic("bob:bob-pw")})
	})
	hashed := fakeenvoy.MustParseChain(b, chainJSON)
	// Hashed config: the phase runs in a goroutine (MayBlock); a hot credential
	// comes from the verified cache.
	b.Run("basic-auth-bcrypt-cached-async", func(b *testing.B) {
		fakeenvoy.BenchChain(b, hashed, [2]string{"authorization", basic("alice:alice-pw")})
	})
}
