package hmacauth

import (
	"fmt"
	"net/http"
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
