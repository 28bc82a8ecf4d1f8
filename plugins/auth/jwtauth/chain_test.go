package jwtauth

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Through the real framework (registry, strict decode, Init, chain, ownership
// shim) over the fake Envoy.
func chainJSON() string {
	return `{"plugins":[{"name":"jwt-auth","config":{"keys":[{"secret":"` + string(hmacKey) + `"}],
		"hide_credentials":true,"consumer_claim":"sub"}}]}`
}

func TestThroughFramework(t *testing.T) {
	testKeys(t)
	cfg := fakeenvoy.MustParseChain(t, chainJSON())
	tok := sign(t, map[string]any{"alg": "HS256"}, map[string]any{"sub": "alice"}, hmacKey)
	res := fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{Headers: [][2]string{{"authorization", "Bearer " + tok}}})
	if res.Status != 200 || res.Upstream == nil || len(res.Violations) > 0 {
		t.Fatalf("status %d violations %v", res.Status, res.Violations)
	}
	if got := res.Upstream.Headers["x-consumer-name"]; len(got) != 1 || got[0] != "alice" {
		t.Fatalf("upstream consumer header %v", got)
	}
	if _, ok := res.Upstream.Headers["authorization"]; ok {
		t.Fatal("token reached the upstream")
	}
	res = fakeenvoy.Do(filtermanager.Factory, cfg, fakeenvoy.Request{})
	if res.Status != 401 || res.Upstream != nil || res.Body != "missing token\n" {
		t.Fatalf("no token: %d %q", res.Status, res.Body)
	}
	if v := res.Headers["www-authenticate"]; len(v) != 1 || v[0] != `Bearer realm="moe"` {
		t.Fatalf("challenge %v", v)
	}
	if _, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"plugins":[{"name":"jwt-auth","config":{"keys":[{"secret":"short"}]}}]}`); err == nil {
		t.Fatal("bad config accepted")
	}
}

// BenchmarkChain is the whole per-request cost through the framework over
// fakeenvoy.Bench, with a bare pass-through Envoy filter as the baseline.
func BenchmarkChain(b *testing.B) {
	testKeys(b)
	b.Run("baseline-passthrough", fakeenvoy.BenchPassThrough)
	cfg := fakeenvoy.MustParseChain(b, chainJSON())
	tok := sign(b, map[string]any{"alg": "HS256"}, map[string]any{"sub": "alice", "iss": "https://idp.example"}, hmacKey)
	b.Run("jwt-auth-HS256", func(b *testing.B) { fakeenvoy.BenchChain(b, cfg, [2]string{"authorization", "Bearer " + tok}) })
}

// chainConsumersJSON is a moe config whose chain-level consumers carry a
// jwt-auth credential, next to jwt-auth's own consumer list.
func chainConsumersJSON(extraJWT string) string {
	return `{"plugins":[{"name":"jwt-auth","config":{"keys":[{"secret":"` + string(hmacKey) + `"}],
		"consumer_claim":"sub"` + extraJWT + `,
		"consumers":[{"name":"own-app","group":"partners","claim_value":"own"}]}}],
	"consumers":[
		{"name":"alice","group":"admins","attributes":{"tier":"gold"},"auth":{"jwt-auth":{"claim_value":"alice-sub"}}},
		{"name":"bob","auth":{"jwt-auth":{}}},
		{"name":"carol"}]}`
}

// Chain-level consumers are identified by jwt-auth next to its own list: by
// their claim_value, or by their name when it is left out.
func TestChainConsumersAreIdentified(t *testing.T) {
	testKeys(t)
	r, err := fakeenvoy.NewChain(chainConsumersJSON(""))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sub, want, group string
	}{
		{"alice-sub", "alice", "admins"},
		{"bob", "bob", ""},
		{"own", "own-app", "partners"},
		{"alice", "", ""},   // alice's claim value is alice-sub, not her name
		{"carol", "", ""},   // carol has no jwt-auth credential
		{"mallory", "", ""}, // unknown: with a consumer list, only listed values pass
	} {
		t.Run(tc.sub, func(t *testing.T) {
			tok := sign(t, map[string]any{"alg": "HS256"}, map[string]any{"sub": tc.sub}, hmacKey)
			res := r.Do(fakeenvoy.Request{Headers: [][2]string{{"authorization", "Bearer " + tok}, {"x-consumer-name", "spoofed"}}})
			if len(res.Violations) > 0 {
				t.Fatal(res.Violations)
			}
			if tc.want == "" {
				if res.Status != 401 || res.Body != "unknown consumer\n" || res.Upstream != nil {
					t.Fatalf("got %d %q, want 401 unknown consumer", res.Status, res.Body)
				}
				return
			}
			if res.Status != 200 {
				t.Fatalf("status %d %q", res.Status, res.Body)
			}
			if got := res.Upstream.Headers["x-consumer-name"]; len(got) != 1 || got[0] != tc.want {
				t.Fatalf("upstream x-consumer-name %v, want %s", got, tc.want)
			}
			// The consumer, with its group, is what later golang filters see.
			var c api.Consumer
			if err := json.Unmarshal([]byte(res.FilterState["moe.consumer"]), &c); err != nil || c.Name != tc.want || c.Group != tc.group {
				t.Fatalf("filter state consumer %q (%v), want %s/%s", res.FilterState["moe.consumer"], err, tc.want, tc.group)
			}
			if tc.want == "alice" && c.Attributes["tier"] != "gold" {
				t.Fatalf("attributes %v", c.Attributes)
			}
		})
	}
}

// A route config that lists no consumers keeps the parent's index, chain
// consumers included; a route that lists its own uses only those.
func TestChainConsumersOnRoutes(t *testing.T) {
	testKeys(t)
	r, err := fakeenvoy.NewChain(chainConsumersJSON(""))
	if err != nil {
		t.Fatal(err)
	}
	open, err := r.WithRoute(`{"plugins":[{"name":"jwt-auth","config":{"anonymous_consumer":"guest"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	own, err := r.WithRoute(`{"plugins":[{"name":"jwt-auth","config":{"consumers":[{"name":"route-app","claim_value":"alice-sub"}]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	tok := func(sub string) fakeenvoy.Request {
		return fakeenvoy.Request{Headers: [][2]string{{"authorization", "Bearer " + sign(t, map[string]any{"alg": "HS256"}, map[string]any{"sub": sub}, hmacKey)}}}
	}
	consumerOf := func(res *fakeenvoy.Result) string {
		if res.Status != 200 || len(res.Upstream.Headers["x-consumer-name"]) != 1 {
			return fmt.Sprintf("status %d %q", res.Status, res.Body)
		}
		return res.Upstream.Headers["x-consumer-name"][0]
	}
	for _, tc := range []struct {
		name string
		r    *fakeenvoy.Runner
		req  fakeenvoy.Request
		want string
	}{
		{"inherited index: chain consumer", open, tok("alice-sub"), "alice"},
		{"inherited index: own consumer", open, tok("own"), "own-app"},
		{"inherited index: anonymous", open, fakeenvoy.Request{}, "guest"},
		{"route's own list", own, tok("alice-sub"), "route-app"},
		{"route's own list replaces the chain's", own, tok("bob"), `status 401 "unknown consumer\n"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := consumerOf(tc.r.Do(tc.req)); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// Errors in chain-level consumers name the chain's field.
func TestChainConsumerConfigErrors(t *testing.T) {
	testKeys(t)
	key := `"keys":[{"secret":"` + string(hmacKey) + `"}]`
	for _, tc := range []struct {
		name, cfg, want string
	}{
		{"unknown credential field",
			`{"plugins":[{"name":"jwt-auth","config":{` + key + `,"consumer_claim":"sub"}}],
			"consumers":[{"name":"alice","auth":{"jwt-auth":{"claim":"alice"}}}]}`,
			`invalid config of plugin "jwt-auth": field consumers[0].auth.jwt-auth.claim: unknown field`},
		{"claim value used twice in the chain",
			`{"plugins":[{"name":"jwt-auth","config":{` + key + `,"consumer_claim":"sub"}}],
			"consumers":[{"name":"alice","auth":{"jwt-auth":{"claim_value":"x"}}},{"name":"bob","auth":{"jwt-auth":{"claim_value":"x"}}}]}`,
			`field consumers[1].auth.jwt-auth.claim_value: claim value "x" is also used by the chain's consumers[0].auth.jwt-auth`},
		{"claim value in both lists",
			`{"plugins":[{"name":"jwt-auth","config":{` + key + `,"consumer_claim":"sub","consumers":[{"name":"own","claim_value":"x"}]}}],
			"consumers":[{"name":"alice","auth":{"jwt-auth":{"claim_value":"x"}}}]}`,
			`field consumers[0].auth.jwt-auth.claim_value: claim value "x" is also used by jwt-auth's consumers[0]`},
		{"default claim value (the name) clashes",
			`{"plugins":[{"name":"jwt-auth","config":{` + key + `,"consumer_claim":"sub","consumers":[{"name":"own","claim_value":"alice"}]}}],
			"consumers":[{"name":"alice","auth":{"jwt-auth":{}}}]}`,
			`field consumers[0].auth.jwt-auth.claim_value: claim value "alice" is also used by jwt-auth's consumers[0]`},
		{"name in both lists",
			`{"plugins":[{"name":"jwt-auth","config":{` + key + `,"consumer_claim":"sub","consumers":[{"name":"alice","claim_value":"a1"}]}}],
			"consumers":[{"name":"alice","auth":{"jwt-auth":{"claim_value":"a2"}}}]}`,
			`field consumers[0].name: consumer "alice" is also defined in the chain's consumers (consumers[0].auth.jwt-auth); define it once`},
		{"chain consumers without consumer_claim",
			`{"plugins":[{"name":"jwt-auth","config":{` + key + `}}],
			"consumers":[{"name":"alice","auth":{"jwt-auth":{"claim_value":"a"}}}]}`,
			`field consumer_claim: required when consumers are listed (consumers[0].auth.jwt-auth)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
		})
	}
}
