package consumerrestriction

import (
	"testing"

	_ "github.com/moeproxy/moe/plugins/auth/keyauth" // the auth plugin chained before
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

const chainJSON = `{"plugins":[
	{"name":"key-auth","config":{"consumers":[
		{"name":"alice","group":"admins","keys":["alice-secret-key"]},
		{"name":"bob","group":"users","keys":["bob-secret-key-1"]}]}},
	{"name":"consumer-restriction","config":{"rules":[
		{"consumers":["*"],"methods":["GET"]},
		{"groups":["admins"]},
		{"action":"deny","consumers":["*"],"paths":["/admin/*"]}]}}]}`

// TestThroughFramework chains the plugin after key-auth inside the real moe
// filter manager over the fake Envoy (shared/testing/fakeenvoy).
func TestThroughFramework(t *testing.T) {
	r, err := fakeenvoy.NewChain(chainJSON)
	if err != nil {
		t.Fatal(err)
	}
	only, err := fakeenvoy.NewPlugin(Name, `{"rules":[{"consumers":["*"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		r            *fakeenvoy.Runner
		method, path string
		key          string
		want         int
	}{
		{"no auth plugin: 401", only, "GET", "/", "", 401},
		{"key-auth answers a missing key", r, "GET", "/", "", 401},
		{"bob reads", r, "GET", "/x", "bob-secret-key-1", 200},
		{"bob cannot write", r, "POST", "/x", "bob-secret-key-1", 403},
		{"alice writes", r, "PUT", "/x", "alice-secret-key", 200},
		{"nobody on /admin", r, "GET", "/admin/x", "alice-secret-key", 403},
		{"encoded /admin", r, "GET", "/%61dmin/x", "alice-secret-key", 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := fakeenvoy.Request{Method: tc.method, Path: tc.path}
			if tc.key != "" {
				req.Headers = [][2]string{{"apikey", tc.key}}
			}
			res := tc.r.Do(req)
			if res.Status != tc.want || len(res.Violations) > 0 {
				t.Fatalf("status %d (want %d) body %q violations %v", res.Status, tc.want, res.Body, res.Violations)
			}
			if tc.want != 200 && res.Upstream != nil {
				t.Fatal("denied request reached the upstream")
			}
		})
	}
}

// BenchmarkChain: whole requests through the fake Envoy and the moe filter
// manager: key-auth alone against key-auth + consumer-restriction.
func BenchmarkChain(b *testing.B) {
	key := [2]string{"apikey", "alice-secret-key"}
	b.Run("baseline-envoy-passthrough", fakeenvoy.BenchPassThrough)
	b.Run("baseline-key-auth-only", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"key-auth","config":{"consumers":[{"name":"alice","group":"admins","keys":["alice-secret-key"]}]}}]}`), key)
	})
	b.Run("key-auth+consumer-restriction", func(b *testing.B) { fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, chainJSON), key) })
}
