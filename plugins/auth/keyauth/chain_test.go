package keyauth

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Through the real framework (registry, strict decode, chain, ownership shim)
// over the fake Envoy: what the unit tests check on the filter alone.
const chainJSON = `{"plugins":[{"name":"key-auth","config":{
	"sources":["header:x-api-key"],"hide_credentials":true,
	"consumers":[{"name":"alice","keys":["alice-key-0123456789"]}]}}]}`

func TestThroughFramework(t *testing.T) {
	cfg := fakeenvoy.MustParseChain(t, chainJSON)
	res := fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{Headers: [][2]string{{"x-api-key", "alice-key-0123456789"}}})
	if res.Status != 200 || res.Upstream == nil || len(res.Violations) > 0 {
		t.Fatalf("status %d violations %v", res.Status, res.Violations)
	}
	if got := res.Upstream.Headers["x-consumer-name"]; len(got) != 1 || got[0] != "alice" {
		t.Fatalf("upstream consumer header %v", got)
	}
	if _, ok := res.Upstream.Headers["x-api-key"]; ok {
		t.Fatal("key reached the upstream")
	}
	res = fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{})
	if res.Status != 401 || res.Upstream != nil || res.Body != "missing API key\n" {
		t.Fatalf("no key: %d %q", res.Status, res.Body)
	}
	if v := res.Headers["www-authenticate"]; len(v) != 1 || v[0] != `Key realm="moe"` {
		t.Fatalf("challenge %v", v)
	}
	if _, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"plugins":[{"name":"key-auth","config":{"consumers":[{"name":"a","keys":["k"]}]}}]}`); err == nil {
		t.Fatal("bad config accepted")
	}
}

// BenchmarkChain is the whole per-request cost through the framework over
// fakeenvoy.Bench; the baseline is a bare pass-through Envoy filter on the same
// fake, measured in the same run.
func BenchmarkChain(b *testing.B) {
	b.Run("baseline-passthrough", fakeenvoy.BenchPassThrough)
	cfg := fakeenvoy.MustParseChain(b, chainJSON)
	b.Run("key-auth", func(b *testing.B) {
		fakeenvoy.BenchChain(b, cfg, [2]string{"x-api-key", "alice-key-0123456789"})
	})
}

// chainConsumersJSON is a moe config with chain-level consumers (carol with a
// key-auth credential, dave with none) next to key-auth's own list.
const chainConsumersJSON = `{
	"consumers":[
		{"name":"carol","group":"partners","attributes":{"tier":"silver"},"auth":{"key-auth":{"keys":["carol-key-0123456789","carol-key-rotated-01"]}}},
		{"name":"dave"}],
	"plugins":[{"name":"key-auth","config":{"sources":["header:x-api-key"],"hide_credentials":true,
		"consumers":[{"name":"alice","keys":["alice-key-0123456789"]}]}}]}`

func consumerOf(t *testing.T, cfg any, key string) (int, string) {
	t.Helper()
	req := fakeenvoy.Request{Headers: [][2]string{{"x-consumer-name", "spoofed"}}}
	if key != "" {
		req.Headers = append(req.Headers, [2]string{"x-api-key", key})
	}
	return fakeenvoy.Forwarded(t, cfg, req, "x-consumer-name")
}

func TestChainConsumersAreIdentified(t *testing.T) {
	cfg := fakeenvoy.MustParseChain(t, chainConsumersJSON)
	for key, want := range map[string]string{
		"carol-key-0123456789": "carol", // chain-level consumer
		"carol-key-rotated-01": "carol", // its second key
		"alice-key-0123456789": "alice", // the plugin's own list
	} {
		if status, who := consumerOf(t, cfg, key); status != 200 || who != want {
			t.Errorf("key %s: %d %q, want %s", key, status, who, want)
		}
	}
	if status, _ := consumerOf(t, cfg, "dave-has-no-key-0000"); status != 401 {
		t.Errorf("unknown key: %d", status)
	}
}

func TestChainConsumersAloneAreEnough(t *testing.T) {
	cfg := fakeenvoy.MustParseChain(t, `{
		"consumers":[{"name":"carol","auth":{"key-auth":{"keys":["carol-key-0123456789"]}}}],
		"plugins":[{"name":"key-auth","config":{"sources":["header:x-api-key"]}}]}`)
	if status, who := consumerOf(t, cfg, "carol-key-0123456789"); status != 200 || who != "carol" {
		t.Fatalf("chain consumer only: %d %q", status, who)
	}
	// Without any consumer anywhere the filter-level config is refused.
	_, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"consumers":[{"name":"dave"}],"plugins":[{"name":"key-auth","config":{}}]}`)
	if err == nil || !strings.Contains(err.Error(), "field consumers: at least one consumer is required") {
		t.Fatalf("no consumers: %v", err)
	}
}

func TestChainConsumersOnRoutes(t *testing.T) {
	run, err := fakeenvoy.NewChain(chainConsumersJSON)
	if err != nil {
		t.Fatal(err)
	}
	// A route config without consumers keeps the parent's index, chain consumers included.
	open, err := run.WithRoute(`{"plugins":[{"name":"key-auth","config":{"sources":["header:x-api-key"],"anonymous_consumer":"guest"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if status, who := consumerOf(t, open.Config(), "carol-key-0123456789"); status != 200 || who != "carol" {
		t.Errorf("chain consumer on a route without consumers: %d %q", status, who)
	}
	if status, who := consumerOf(t, open.Config(), ""); status != 200 || who != "guest" {
		t.Errorf("anonymous on the route: %d %q", status, who)
	}
	// A route with consumers of its own replaces the whole index.
	own, err := run.WithRoute(`{"plugins":[{"name":"key-auth","config":{"sources":["header:x-api-key"],
		"consumers":[{"name":"zed","keys":["zed-key-0123456789"]}]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if status, who := consumerOf(t, own.Config(), "zed-key-0123456789"); status != 200 || who != "zed" {
		t.Errorf("route consumer: %d %q", status, who)
	}
	if status, _ := consumerOf(t, own.Config(), "carol-key-0123456789"); status != 401 {
		t.Errorf("chain consumer on a route with its own consumers: %d", status)
	}
}

func TestChainConsumerConfigErrors(t *testing.T) {
	plugin := func(cfg string) string { return `"plugins":[{"name":"key-auth","config":` + cfg + `}]` }
	own := plugin(`{"max_key_bytes":16,"consumers":[{"name":"alice","keys":["alice-key-0123"]}]}`)
	for _, tc := range []struct{ name, consumers, plugins, want string }{
		{"short chain key (credential Validate)", `[{"name":"carol","auth":{"key-auth":{"keys":["carol-key-0123","tiny-k"]}}}]`, own,
			`invalid config of plugin "key-auth": field consumers[0].auth.key-auth.keys[1]: too short (at least 8 bytes)`},
		{"chain credential without keys", `[{"name":"carol","auth":{"key-auth":{"keys":[]}}}]`, own,
			`field consumers[0].auth.key-auth.keys: at least one key is required`},
		{"unknown credential field", `[{"name":"carol","auth":{"key-auth":{"key":"carol-key-0123"}}}]`, own,
			`field consumers[0].auth.key-auth.key: unknown field`},
		{"chain key over the plugin's max_key_bytes (Init)", `[{"name":"dave"},{"name":"carol","auth":{"key-auth":{"keys":["carol-key-0123456789"]}}}]`, own,
			`field consumers[1].auth.key-auth.keys[0]: longer than max_key_bytes (16)`},
		{"a key of the own list reused by a chain consumer", `[{"name":"carol","auth":{"key-auth":{"keys":["alice-key-0123"]}}}]`, own,
			`field consumers[0].auth.key-auth.keys[0]: same key as consumers[0].keys[0] (keys must be unique)`},
		{"a key used twice in the chain", `[{"name":"carol","auth":{"key-auth":{"keys":["carol-key-0123"]}}},{"name":"dave","auth":{"key-auth":{"keys":["carol-key-0123"]}}}]`, own,
			`field consumers[1].auth.key-auth.keys[0]: same key as consumers[0].auth.key-auth.keys[0]`},
		{"a name in both lists", `[{"name":"alice","auth":{"key-auth":{"keys":["other-key-0123"]}}}]`, own,
			`field consumers[0].name: consumer "alice" is also defined in the chain's consumers (consumers[0].auth.key-auth); define it once`},
		{"own consumer without keys", `[{"name":"carol","auth":{"key-auth":{"keys":["carol-key-0123"]}}}]`, plugin(`{"consumers":[{"name":"alice"}]}`),
			`field consumers[0].keys: at least one key is required`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"consumers":`+tc.consumers+`,`+tc.plugins+`}`)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
			for _, secret := range []string{"alice-key-0123", "carol-key-0123", "other-key-0123", "tiny-k"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error prints a key: %v", err)
				}
			}
		})
	}
}
