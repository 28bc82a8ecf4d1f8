package keyauth

import (
	"encoding/base64"
	"testing"

	_ "github.com/moeproxy/moe/plugins/auth/basicauth"
	_ "github.com/moeproxy/moe/plugins/auth/hmacauth"
	_ "github.com/moeproxy/moe/plugins/auth/jwtauth"
	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Kong-style OR of auth plugins: a first plugin authenticates alice and
// forwards her under no header of its own, then a plugin with
// anonymous_consumer steps aside. That plugin still owns its consumer_header:
// the client's value must not reach the upstream, the established consumer
// does.
func TestSteppingAsidePluginStillOwnsItsConsumerHeader(t *testing.T) {
	keyAuthFirst := `{"name":"key-auth","config":{"sources":["header:x-api-key"],"consumer_header":"",` +
		`"consumers":[{"name":"alice","keys":["alice-key-0123456789"]}]}}`
	keyAuthCred := [2]string{"x-api-key", "alice-key-0123456789"}
	for _, tc := range []struct {
		name          string
		first, second string
		cred          [2]string
	}{
		{"basic-auth steps aside", keyAuthFirst,
			`{"name":"basic-auth","config":{"anonymous_consumer":"guest","consumers":[{"name":"bob","password":"bob-password"}]}}`, keyAuthCred},
		{"hmac-auth steps aside", keyAuthFirst,
			`{"name":"hmac-auth","config":{"anonymous_consumer":"guest","consumers":[{"name":"bob","keys":[{"key_id":"k1","secret":"0123456789abcdef0123"}]}]}}`, keyAuthCred},
		{"jwt-auth steps aside", keyAuthFirst,
			`{"name":"jwt-auth","config":{"anonymous_consumer":"guest","keys":[{"secret":"0123456789abcdef0123456789abcdef"}]}}`, keyAuthCred},
		{"key-auth steps aside",
			`{"name":"basic-auth","config":{"consumer_header":"","consumers":[{"name":"alice","password":"alice-password"}]}}`,
			`{"name":"key-auth","config":{"anonymous_consumer":"guest","consumers":[{"name":"bob","keys":["bob-key-0123456789"]}]}}`,
			[2]string{"authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:alice-password"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeenvoy.MustParseChain(t, `{"plugins":[`+tc.first+`,`+tc.second+`]}`)
			res := fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{Headers: [][2]string{
				tc.cred,
				{"x-consumer-name", "admin"},
			}})
			if res.Status != 200 || res.Upstream == nil || len(res.Violations) > 0 {
				t.Fatalf("status %d body %q violations %v", res.Status, res.Body, res.Violations)
			}
			if got := res.Upstream.Headers["x-consumer-name"]; len(got) != 1 || got[0] != "alice" {
				t.Fatalf("upstream x-consumer-name %v, want [alice] (the client sent admin)", got)
			}
		})
	}
}
