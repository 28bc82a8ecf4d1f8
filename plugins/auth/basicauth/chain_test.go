package basicauth

import (
	"strings"
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

// chainConsumersJSON is a moe config with chain-level consumers (carol with a
// bcrypt hash and a user name of her own, dave with a clear-text password and
// his consumer name as user name, erin with no basic-auth credential) next to
// basic-auth's own list.
const chainConsumersJSON = `{
	"consumers":[
		{"name":"carol","group":"partners","auth":{"basic-auth":{"username":"carol@example.com","password_hash":"$2a$04$fn2iOgxkc7EnV4SjTHfNMeBPnBFOHvrfjAo/ARmi1rlpsqanghwXe"}}},
		{"name":"dave","auth":{"basic-auth":{"password":"dave-pw"}}},
		{"name":"erin"}],
	"plugins":[{"name":"basic-auth","config":{"consumers":[{"name":"bob","password":"bob-pw"}]}}]}`

func userOf(t *testing.T, cfg any, auth string) (int, string) {
	t.Helper()
	req := fakeenvoy.Request{Headers: [][2]string{{"x-consumer-name", "spoofed"}}}
	if auth != "" {
		req.Headers = append(req.Headers, [2]string{"authorization", auth})
	}
	return fakeenvoy.Forwarded(t, cfg, req, "x-consumer-name")
}

func TestChainConsumersAreIdentified(t *testing.T) {
	cfg := fakeenvoy.MustParseChain(t, chainConsumersJSON)
	for _, tc := range []struct {
		auth   string
		status int
		who    string
	}{
		{basic("carol@example.com:alice-pw"), 200, "carol"}, // chain consumer, bcrypt: the phase runs async
		{basic("dave:dave-pw"), 200, "dave"},                // chain consumer, user name = consumer name
		{basic("bob:bob-pw"), 200, "bob"},                   // the plugin's own list
		{basic("carol:alice-pw"), 401, ""},                  // carol's user name is not her consumer name
		{basic("dave:bob-pw"), 401, ""},
		{basic("erin:erin-pw"), 401, ""},
	} {
		if status, who := userOf(t, cfg, tc.auth); status != tc.status || who != tc.who {
			t.Errorf("%s: %d %q, want %d %q", tc.auth, status, who, tc.status, tc.who)
		}
	}
	// A chain consumer's hash makes the plugin declare MayBlock: the phase runs
	// in a goroutine and Continues asynchronously.
	hdr := [][2]string{{"authorization", basic("dave:dave-pw")}}
	if res := fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{Headers: hdr}); res.Status != 200 || res.Continues == 0 {
		t.Errorf("hashed chain consumer: status %d, %d async continues (want the phase off the worker)", res.Status, res.Continues)
	}
	// Chain consumers alone, clear-text passwords: inline, no goroutine.
	plain := fakeenvoy.MustParseChain(t, `{"consumers":[{"name":"dave","auth":{"basic-auth":{"password":"dave-pw"}}}],
		"plugins":[{"name":"basic-auth","config":{}}]}`)
	if status, who := userOf(t, plain, basic("dave:dave-pw")); status != 200 || who != "dave" {
		t.Errorf("chain consumer only: %d %q", status, who)
	}
	if res := fakeenvoy.Do(filtermanager.Factory, plain, fakeenvoy.Request{Headers: hdr}); res.Status != 200 || res.Continues != 0 {
		t.Errorf("clear-text passwords: status %d, %d async continues (want inline)", res.Status, res.Continues)
	}
}

func TestChainConsumersOnRoutes(t *testing.T) {
	run, err := fakeenvoy.NewChain(chainConsumersJSON)
	if err != nil {
		t.Fatal(err)
	}
	open, err := run.WithRoute(`{"plugins":[{"name":"basic-auth","config":{"anonymous_consumer":"guest"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if status, who := userOf(t, open.Config(), basic("dave:dave-pw")); status != 200 || who != "dave" {
		t.Errorf("chain consumer on a route without consumers: %d %q", status, who)
	}
	own, err := run.WithRoute(`{"plugins":[{"name":"basic-auth","config":{"consumers":[{"name":"zed","password":"zed-pw"}]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := userOf(t, own.Config(), basic("dave:dave-pw")); status != 401 {
		t.Errorf("chain consumer on a route with its own consumers: %d", status)
	}
	if status, who := userOf(t, own.Config(), basic("zed:zed-pw")); status != 200 || who != "zed" {
		t.Errorf("route consumer: %d %q", status, who)
	}
}

func TestChainConsumerConfigErrors(t *testing.T) {
	own := `"plugins":[{"name":"basic-auth","config":{"consumers":[{"name":"bob","password":"s3cret-bob"}]}}]`
	for _, tc := range []struct{ name, consumers, want string }{
		{"password and hash", `[{"name":"carol","auth":{"basic-auth":{"password":"s3cret-x","password_hash":"$2a$04$x"}}}]`,
			`invalid config of plugin "basic-auth": field consumers[0].auth.basic-auth: set password or password_hash, not both`},
		{"no password", `[{"name":"carol","auth":{"basic-auth":{"username":"carol"}}}]`,
			`field consumers[0].auth.basic-auth: password or password_hash is required`},
		{"bad hash", `[{"name":"erin"},{"name":"carol","auth":{"basic-auth":{"password_hash":"$2a$04$s3cret-x"}}}]`,
			`field consumers[1].auth.basic-auth.password_hash: malformed bcrypt hash`},
		{"colon in a user name", `[{"name":"carol","auth":{"basic-auth":{"username":"c:d","password":"s3cret-x"}}}]`,
			`field consumers[0].auth.basic-auth.username: must not contain ':'`},
		{"colon in the consumer name used as user name", `[{"name":"c:d","auth":{"basic-auth":{"password":"s3cret-x"}}}]`,
			`field consumers[0].auth.basic-auth.username: the consumer name is the user name when username is not set, and it must not contain ':'`},
		{"a user name of the own list reused", `[{"name":"carol","auth":{"basic-auth":{"username":"bob","password":"s3cret-x"}}}]`,
			`field consumers[0].auth.basic-auth.username: user "bob" is also consumers[0]`},
		{"a user name used twice in the chain", `[{"name":"carol","auth":{"basic-auth":{"password":"s3cret-x"}}},{"name":"dave","auth":{"basic-auth":{"username":"carol","password":"s3cret-x"}}}]`,
			`field consumers[1].auth.basic-auth.username: user "carol" is also consumers[0].auth.basic-auth`},
		{"a name in both lists", `[{"name":"bob","auth":{"basic-auth":{"username":"bobby","password":"s3cret-x"}}}]`,
			`field consumers[0].name: consumer "bob" is also defined in the chain's consumers (consumers[0].auth.basic-auth); define it once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"consumers":`+tc.consumers+`,`+own+`}`)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error prints a password: %v", err)
			}
		})
	}
}
