package hmacauth

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

func chainJSON(extra string) string {
	return `{"plugins":[{"name":"hmac-auth","config":{` + extra + `"consumers":[
	{"name":"alice","keys":[{"key_id":"alice-1","secret":"` + aliceSecret + `"}]}]}}]}`
}

// signedHeaders signs GET path now with the independent client signer.
func signedHeaders(path, nonce string, list []string) [][2]string {
	hs := [][2]string{{"date", time.Now().UTC().Format(http.TimeFormat)}}
	if nonce != "" {
		hs = append(hs, [2]string{"x-nonce", nonce})
	}
	return append(hs, [2]string{"authorization", clientSign("alice-1", aliceSecret, "hmac-sha256", "GET", path, hs, list)})
}

func TestThroughFramework(t *testing.T) {
	cfg := fakeenvoy.MustParseChain(t, chainJSON(`"validate_request_body":true,`))
	nonce := fmt.Sprint("fw-", time.Now().UnixNano())
	req := fakeenvoy.Request{Path: "/a?b=1", Headers: signedHeaders("/a?b=1", nonce, stdList)}
	res := fakeenvoy.Do(filtermanager.Factory, cfg, req)
	if res.Status != 200 || len(res.Violations) > 0 {
		t.Fatalf("status %d %q violations %v", res.Status, res.Body, res.Violations)
	}
	if got := res.Upstream.Headers["x-consumer-name"]; len(got) != 1 || got[0] != "alice" {
		t.Fatalf("consumer header %v", got)
	}
	if res = fakeenvoy.Do(filtermanager.Factory, cfg, req); res.Status != 401 || res.Body != "replayed request (nonce already used)\n" {
		t.Fatalf("replay: %d %q", res.Status, res.Body)
	}
	// WholeBody config: a body without a digest is refused after buffering.
	req = fakeenvoy.Request{Method: "GET", Path: "/", Headers: signedHeaders("/", nonce+"-2", stdList), Body: []string{"he", "llo"}}
	if res = fakeenvoy.Do(filtermanager.Factory, cfg, req); res.Status != 401 || res.Body != "body digest missing or mismatched\n" {
		t.Fatalf("body without digest: %d %q %v", res.Status, res.Body, res.Violations)
	}
}

func BenchmarkChain(b *testing.B) {
	b.Run("baseline-passthrough", fakeenvoy.BenchPassThrough)
	// fakeenvoy.Bench replays one fixed request, so replay protection is off
	// here; BenchmarkHMACAuthSHA256 measures the nonce cache.
	cfg := fakeenvoy.MustParseChain(b, chainJSON(`"nonce_header":"",`))
	b.Run("hmac-auth-sha256", func(b *testing.B) {
		fakeenvoy.BenchChain(b, cfg, signedHeaders("/", "", []string{"@request-target", "date"})...)
	})
}

const carolSecret = "carol-secret-0123456789abcdef"

// chainConsumersJSON is a moe config with chain-level consumers (carol with
// an hmac-auth credential, dave with none) next to hmac-auth's own list.
const chainConsumersJSON = `{
	"consumers":[
		{"name":"carol","group":"partners","auth":{"hmac-auth":{"keys":[{"key_id":"carol-1","secret":"` + carolSecret + `"}]}}},
		{"name":"dave"}],
	"plugins":[{"name":"hmac-auth","config":{"consumers":[
		{"name":"alice","keys":[{"key_id":"alice-1","secret":"` + aliceSecret + `"}]}]}}]}`

// signedAs signs GET path now as keyID with secret, with a fresh nonce.
func signedAs(keyID, secret, path string) fakeenvoy.Request {
	hs := [][2]string{{"date", time.Now().UTC().Format(http.TimeFormat)}, {"x-nonce", nextNonce()}}
	hs = append(hs, [2]string{"authorization", clientSign(keyID, secret, "hmac-sha256", "GET", path, hs, stdList)})
	return fakeenvoy.Request{Path: path, Headers: append(hs, [2]string{"x-consumer-name", "spoofed"})}
}

func consumerOf(t *testing.T, cfg any, req fakeenvoy.Request) (int, string) {
	t.Helper()
	return fakeenvoy.Forwarded(t, cfg, req, "x-consumer-name")
}

func TestChainConsumersAreIdentified(t *testing.T) {
	cfg := fakeenvoy.MustParseChain(t, chainConsumersJSON)
	for _, tc := range []struct {
		name   string
		req    fakeenvoy.Request
		status int
		who    string
	}{
		{"chain-level consumer", signedAs("carol-1", carolSecret, "/a"), 200, "carol"},
		{"the plugin's own consumer", signedAs("alice-1", aliceSecret, "/a"), 200, "alice"},
		{"chain key id, wrong secret", signedAs("carol-1", aliceSecret, "/a"), 401, ""},
		{"a consumer without an hmac-auth credential", signedAs("dave", carolSecret, "/a"), 401, ""},
	} {
		if status, who := consumerOf(t, cfg, tc.req); status != tc.status || who != tc.who {
			t.Errorf("%s: %d %q, want %d %q", tc.name, status, who, tc.status, tc.who)
		}
	}
	// Chain consumers alone are enough.
	alone := fakeenvoy.MustParseChain(t, `{"consumers":[{"name":"carol","auth":{"hmac-auth":{"keys":[{"key_id":"carol-1","secret":"`+carolSecret+`"}]}}}],
		"plugins":[{"name":"hmac-auth","config":{}}]}`)
	if status, who := consumerOf(t, alone, signedAs("carol-1", carolSecret, "/")); status != 200 || who != "carol" {
		t.Errorf("chain consumer only: %d %q", status, who)
	}
}

func TestChainConsumersOnRoutes(t *testing.T) {
	run, err := fakeenvoy.NewChain(chainConsumersJSON)
	if err != nil {
		t.Fatal(err)
	}
	open, err := run.WithRoute(`{"plugins":[{"name":"hmac-auth","config":{"anonymous_consumer":"guest"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if status, who := consumerOf(t, open.Config(), signedAs("carol-1", carolSecret, "/r")); status != 200 || who != "carol" {
		t.Errorf("chain consumer on a route without consumers: %d %q", status, who)
	}
	own, err := run.WithRoute(`{"plugins":[{"name":"hmac-auth","config":{"consumers":[{"name":"zed","keys":[{"key_id":"zed-1","secret":"zed-secret-0123456789"}]}]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := consumerOf(t, own.Config(), signedAs("carol-1", carolSecret, "/r")); status != 401 {
		t.Errorf("chain consumer on a route with its own consumers: %d", status)
	}
	if status, who := consumerOf(t, own.Config(), signedAs("zed-1", "zed-secret-0123456789", "/r")); status != 200 || who != "zed" {
		t.Errorf("route consumer: %d %q", status, who)
	}
}

func TestChainConsumerConfigErrors(t *testing.T) {
	own := `"plugins":[{"name":"hmac-auth","config":{"consumers":[{"name":"alice","keys":[{"key_id":"alice-1","secret":"s3cret-0123456789"}]}]}}]`
	for _, tc := range []struct{ name, consumers, want string }{
		{"short chain secret", `[{"name":"dave"},{"name":"carol","auth":{"hmac-auth":{"keys":[{"key_id":"carol-1","secret":"s3cret-tiny"}]}}}]`,
			`invalid config of plugin "hmac-auth": field consumers[1].auth.hmac-auth.keys[0].secret: too short (at least 16 bytes`},
		{"no keys", `[{"name":"carol","auth":{"hmac-auth":{"keys":[]}}}]`,
			`field consumers[0].auth.hmac-auth.keys: at least one key is required`},
		{"key id with a quote", `[{"name":"carol","auth":{"hmac-auth":{"keys":[{"key_id":"c\"1","secret":"s3cret-0123456789"}]}}}]`,
			`field consumers[0].auth.hmac-auth.keys[0].key_id: must be 1-256 printable characters`},
		{"a key id of the own list reused", `[{"name":"carol","auth":{"hmac-auth":{"keys":[{"key_id":"alice-1","secret":"s3cret-9876543210"}]}}}]`,
			`field consumers[0].auth.hmac-auth.keys[0].key_id: key id "alice-1" is also consumers[0].keys[0]`},
		{"a key id twice in one credential", `[{"name":"carol","auth":{"hmac-auth":{"keys":[{"key_id":"c1","secret":"s3cret-0123456789"},{"key_id":"c1","secret":"s3cret-9876543210"}]}}}]`,
			`field consumers[0].auth.hmac-auth.keys[1].key_id: key id "c1" is also consumers[0].auth.hmac-auth.keys[0]`},
		{"a name in both lists", `[{"name":"alice","auth":{"hmac-auth":{"keys":[{"key_id":"a2","secret":"s3cret-0123456789"}]}}}]`,
			`field consumers[0].name: consumer "alice" is also defined in the chain's consumers (consumers[0].auth.hmac-auth); define it once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"consumers":`+tc.consumers+`,`+own+`}`)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error prints a secret: %v", err)
			}
		})
	}
}
