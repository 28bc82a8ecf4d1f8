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

const rbacRules = `{"rules":[
	{"consumers":["*"],"methods":["GET"]},
	{"groups":["admins"]},
	{"action":"deny","consumers":["*"],"paths":["/admin/*"]}]}`

// A consumer defined once in the moe config's consumers (with a credential
// for the auth plugin) is what consumer-restriction decides on, by name and
// by the group given there.
func TestChainLevelConsumers(t *testing.T) {
	r, err := fakeenvoy.NewChain(`{"plugins":[
		{"name":"key-auth","config":{"sources":["header:x-key"]}},
		{"name":"consumer-restriction","config":` + rbacRules + `}],
	"consumers":[
		{"name":"alice","group":"admins","auth":{"key-auth":{"keys":["alice-key-0001"]}}},
		{"name":"bob","group":"users","auth":{"key-auth":{"keys":["bob-key-0001"]}}},
		{"name":"carol","auth":{"key-auth":{"keys":["carol-key-0001"]}}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, key string
		want                    int
	}{
		{"admins write", "POST", "/x", "alice-key-0001", 200},
		{"users read", "GET", "/x", "bob-key-0001", 200},
		{"users cannot write", "POST", "/x", "bob-key-0001", 403},
		{"no group: read only", "PUT", "/x", "carol-key-0001", 403},
		{"deny rule wins for admins", "GET", "/admin/x", "alice-key-0001", 403},
		{"the auth plugin answers an unknown key", "GET", "/x", "nope", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Do(fakeenvoy.Request{Method: tc.method, Path: tc.path, Headers: [][2]string{{"x-key", tc.key}}})
			if res.Status != tc.want || len(res.Violations) > 0 {
				t.Fatalf("status %d (want %d) body %q violations %v", res.Status, tc.want, res.Body, res.Violations)
			}
			if tc.want != 200 && res.Upstream != nil {
				t.Fatal("denied request reached the upstream")
			}
		})
	}
}

// consumer-restriction in a later golang filter than the auth plugin: the
// consumer comes from Envoy's filter state ("moe.consumer", what the first
// golang filter leaves), and consumer-restriction decides on it.
func TestConsumerFromAnEarlierGolangFilter(t *testing.T) {
	r, err := fakeenvoy.NewPlugin(Name, rbacRules)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, state, method, path string
		want                      int
	}{
		{"admins write", `{"name":"alice","group":"admins"}`, "POST", "/x", 200},
		{"deny rule still wins", `{"name":"alice","group":"admins"}`, "GET", "/admin/users", 403},
		{"users read", `{"name":"bob","group":"users"}`, "GET", "/x", 200},
		{"users cannot write", `{"name":"bob","group":"users"}`, "POST", "/x", 403},
		{"anonymous is not '*'", `{"name":"guest","attributes":{"moe.anonymous":"true"}}`, "GET", "/x", 401},
		{"no consumer", ``, "GET", "/x", 401},
		{"malformed state is not trusted", `{"name":"alice","group":`, "POST", "/x", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := fakeenvoy.Request{Method: tc.method, Path: tc.path}
			if tc.state != "" {
				req.FilterState = map[string]string{"moe.consumer": tc.state}
			}
			res := r.Do(req)
			if res.Status != tc.want || len(res.Violations) > 0 {
				t.Fatalf("status %d (want %d) body %q violations %v", res.Status, tc.want, res.Body, res.Violations)
			}
			if tc.want != 200 && res.Upstream != nil {
				t.Fatal("denied request reached the upstream")
			}
			if res.FilterStateWrites != 0 {
				t.Errorf("consumer-restriction wrote filter state %d times", res.FilterStateWrites)
			}
		})
	}

	// The same, with the filter state the first golang filter really leaves:
	// key-auth identifies alice (a chain-level consumer) there.
	first, err := fakeenvoy.NewChain(`{"plugins":[{"name":"key-auth","config":{"sources":["header:x-key"]}}],
		"consumers":[{"name":"alice","group":"admins","auth":{"key-auth":{"keys":["alice-key-0001"]}}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	res := first.Do(fakeenvoy.Request{Method: "POST", Headers: [][2]string{{"x-key", "alice-key-0001"}}})
	if res.Status != 200 || res.FilterState["moe.consumer"] == "" {
		t.Fatalf("first filter: %d, state %v", res.Status, res.FilterState)
	}
	res = r.Do(fakeenvoy.Request{Method: "POST", FilterState: res.FilterState})
	if res.Status != 200 {
		t.Fatalf("second filter: %d %q", res.Status, res.Body)
	}
}
