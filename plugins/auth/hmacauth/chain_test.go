package hmacauth

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/fakehost"
	"github.com/moeproxy/moe/shared/filtermanager"
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
	cfg, err := fakehost.ParseFilter(filtermanager.Parser{}, chainJSON(`"validate_request_body":true,`))
	if err != nil {
		t.Fatal(err)
	}
	nonce := fmt.Sprint("fw-", time.Now().UnixNano())
	req := fakehost.Request{Path: "/a?b=1", Headers: signedHeaders("/a?b=1", nonce, stdList)}
	res := fakehost.Do(filtermanager.Factory, cfg, req)
	if res.Status != 200 || len(res.Violations) > 0 {
		t.Fatalf("status %d %q violations %v", res.Status, res.Body, res.Violations)
	}
	if got := res.Upstream.Headers["x-consumer-name"]; len(got) != 1 || got[0] != "alice" {
		t.Fatalf("consumer header %v", got)
	}
	if res = fakehost.Do(filtermanager.Factory, cfg, req); res.Status != 401 || res.Body != "replayed request (nonce already used)\n" {
		t.Fatalf("replay: %d %q", res.Status, res.Body)
	}
	// WholeBody config: a body without a digest is refused after buffering.
	req = fakehost.Request{Method: "GET", Path: "/", Headers: signedHeaders("/", nonce+"-2", stdList), Body: []string{"he", "llo"}}
	if res = fakehost.Do(filtermanager.Factory, cfg, req); res.Status != 401 || res.Body != "body digest missing or mismatched\n" {
		t.Fatalf("body without digest: %d %q %v", res.Status, res.Body, res.Violations)
	}
}

func passThroughFactory(any, envoy.FilterCallbackHandler) envoy.StreamFilter {
	return &envoy.PassThroughStreamFilter{}
}

func BenchmarkChain(b *testing.B) {
	run := func(b *testing.B, f envoy.StreamFilterFactory, cfg any, hdr ...[2]string) {
		fb := fakehost.NewBench(f, cfg, hdr...)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if st := fb.Run(); st != envoy.Continue {
				b.Fatalf("status %v", st)
			}
		}
	}
	b.Run("baseline-passthrough", func(b *testing.B) { run(b, passThroughFactory, nil) })
	// fakehost.Bench replays one fixed request, so replay protection is off
	// here; BenchmarkHMACAuthSHA256 measures the nonce cache.
	cfg, err := fakehost.ParseFilter(filtermanager.Parser{}, chainJSON(`"nonce_header":"",`))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("hmac-auth-sha256", func(b *testing.B) {
		run(b, filtermanager.Factory, cfg, signedHeaders("/", "", []string{"@request-target", "date"})...)
	})
}
