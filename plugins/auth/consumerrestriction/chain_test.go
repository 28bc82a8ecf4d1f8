package consumerrestriction

import (
	"testing"

	_ "github.com/moeproxy/moe/plugins/auth/keyauth" // the auth plugin chained before
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
	"github.com/moeproxy/moe/shared/registry"
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

// testAuth is a minimal auth plugin with a chain-level credential, for the
// tests below: x-key identifies the consumer whose credential has that key
// (constant-time compares do not matter here).
//
// Note: key-auth, the auth plugin of this package's other tests, does not
// register a credential type (registry.Plugin.NewCredential) in this branch
// yet. Once it does, these tests can use key-auth's chain-level credential
// (consumers[].auth.key-auth) instead of this plugin.
const testAuth = "test-chain-auth"

type testCred struct {
	Key string `json:"key"`
}

type testAuthConfig struct {
	byKey map[string]*api.Consumer
}

func (c *testAuthConfig) Init(env api.ConfigEnv) error {
	entries, err := consumer.Collect(env, "consumers", []testAuthEntry(nil), func(x *testAuthEntry) (*consumer.Spec, *testCred) { return &x.Spec, &x.testCred })
	if err != nil {
		return err
	}
	c.byKey = map[string]*api.Consumer{}
	for _, e := range entries {
		c.byKey[e.Credential.Key] = e.Consumer
	}
	return nil
}

type testAuthEntry struct {
	consumer.Spec
	testCred
}

type testAuthFilter struct{ c *testAuthConfig }

func (f testAuthFilter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	k, _ := h.Get("x-key")
	c := f.c.byKey[k]
	if c == nil {
		return ctx.Reply(401, "who are you", nil)
	}
	consumer.Identify(ctx, h, c, "x-consumer-name")
	return api.Continue
}

func registerTestAuth() {
	if _, ok := registry.Get(testAuth); ok {
		return
	}
	registry.Register(registry.Plugin{
		Name:          testAuth,
		NewConfig:     func() any { return &testAuthConfig{} },
		NewCredential: func() any { return &testCred{} },
		Factory:       func(c any) api.Filter { return testAuthFilter{c.(*testAuthConfig)} },
	})
}

const rbacRules = `{"rules":[
	{"consumers":["*"],"methods":["GET"]},
	{"groups":["admins"]},
	{"action":"deny","consumers":["*"],"paths":["/admin/*"]}]}`

// A consumer defined once in the moe config's consumers (with a credential
// for the auth plugin) is what consumer-restriction decides on, by name and
// by the group given there.
func TestChainLevelConsumers(t *testing.T) {
	registerTestAuth()
	r, err := fakeenvoy.NewChain(`{"plugins":[
		{"name":"` + testAuth + `"},
		{"name":"consumer-restriction","config":` + rbacRules + `}],
	"consumers":[
		{"name":"alice","group":"admins","auth":{"` + testAuth + `":{"key":"alice-key"}}},
		{"name":"bob","group":"users","auth":{"` + testAuth + `":{"key":"bob-key"}}},
		{"name":"carol","auth":{"` + testAuth + `":{"key":"carol-key"}}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, key string
		want                    int
	}{
		{"admins write", "POST", "/x", "alice-key", 200},
		{"users read", "GET", "/x", "bob-key", 200},
		{"users cannot write", "POST", "/x", "bob-key", 403},
		{"no group: read only", "PUT", "/x", "carol-key", 403},
		{"deny rule wins for admins", "GET", "/admin/x", "alice-key", 403},
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
	// an auth plugin identifies alice (a chain-level consumer) there.
	registerTestAuth()
	first, err := fakeenvoy.NewChain(`{"plugins":[{"name":"` + testAuth + `"}],
		"consumers":[{"name":"alice","group":"admins","auth":{"` + testAuth + `":{"key":"alice-key"}}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	res := first.Do(fakeenvoy.Request{Method: "POST", Headers: [][2]string{{"x-key", "alice-key"}}})
	if res.Status != 200 || res.FilterState["moe.consumer"] == "" {
		t.Fatalf("first filter: %d, state %v", res.Status, res.FilterState)
	}
	res = r.Do(fakeenvoy.Request{Method: "POST", FilterState: res.FilterState})
	if res.Status != 200 {
		t.Fatalf("second filter: %d %q", res.Status, res.Body)
	}
}
