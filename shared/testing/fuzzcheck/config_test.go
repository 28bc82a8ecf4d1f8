package fuzzcheck

import "testing"

// leakedSecret decides what counts as a credential of a config: the
// one-letter JWK members only inside a "jwk" (fuzz finding: access-log's
// {"json":{"d":"$0000000"}} had its unknown variable, rightly quoted in the
// error, taken for an RSA private exponent).
func TestLeakedSecret(t *testing.T) {
	for _, c := range []struct {
		plugin, raw, msg, want string
	}{
		{"access-log", `{"json":{"d":"$0000000"}}`, `field json.d: template "$0000000": unknown variable $0000000`, ""},
		{"jwt-auth", `{"keys":[{"jwk":{"kty":"RSA","d":"private-exponent"}}]}`, `keys[0].jwk: bad d "private-exponent"`, "private-exponent"},
		{"jwt-auth", `{"keys":[{"jwk":{"kty":"oct","k":"symmetric-key"}}]}`, `keys[0].jwk: bad k symmetric-key`, "symmetric-key"},
		{"jwt-auth", `{"keys":[{"secret":"hs256-secret"}]}`, `keys[0].secret: "hs256-secret" too short`, "hs256-secret"},
		{"basic-auth", `{"consumers":[{"password":"hunter22"}]}`, `password hunter22`, "hunter22"},
		{"basic-auth", `{"consumers":[{"password":"hunter22","name":"hunter22x"}]}`, `password hunter22`, ""},
		{"key-auth", `{"keys":["key-of-a-user"]}`, `keys[0]: "key-of-a-user"`, "key-of-a-user"},
		{"header-mutation", `{"keys":["not-a-credential"]}`, `keys[0]: "not-a-credential"`, ""},
	} {
		if got := leakedSecret(c.plugin, []byte(c.raw), c.msg); got != c.want {
			t.Errorf("leakedSecret(%s, %s, %q) = %q, want %q", c.plugin, c.raw, c.msg, got, c.want)
		}
	}
}
