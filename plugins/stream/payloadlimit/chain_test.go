package payloadlimit_test

import (
	"strings"
	"testing"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Through the real framework over a fake Envoy.
func TestChain(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("payload-limit", `{"max_request_body": 10, "max_response_body": 20}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		req      fakeenvoy.Request
		status   int
		upstream bool
		body     string
	}{
		{"no body", fakeenvoy.Request{}, 200, true, ""},
		{"content-length over: refused before the body", fakeenvoy.Request{Method: "POST",
			Headers: [][2]string{{"content-length", "11"}}, Body: []string{"01234567890"}}, 413, false, "Payload Too Large"},
		{"content-length within", fakeenvoy.Request{Method: "POST",
			Headers: [][2]string{{"content-length", "10"}}, Body: []string{"01234", "56789"}}, 200, true, ""},
		{"chunked within", fakeenvoy.Request{Method: "POST", Body: []string{"0123", "4567", "89"}}, 200, true, ""},
		{"chunked over", fakeenvoy.Request{Method: "POST", Body: []string{"0123", "4567", "890"}}, 413, false, "Payload Too Large"},
		{"response over by content-length", fakeenvoy.Request{Upstream: func(*fakeenvoy.Upstream) fakeenvoy.Response {
			return fakeenvoy.Response{Status: 200, Headers: [][2]string{{"content-length", "21"}}, Body: []string{strings.Repeat("r", 21)}}
		}}, 500, true, "Internal Server Error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := r.Do(tc.req)
			if len(res.Violations) > 0 {
				t.Fatalf("violations %v", res.Violations)
			}
			if res.Status != tc.status {
				t.Fatalf("status %d body %q upstream %+v", res.Status, res.Body, res.Upstream)
			}
			if tc.body != "" && res.Body != tc.body {
				t.Fatalf("body %q, want %q", res.Body, tc.body)
			}
			whole := res.Upstream != nil && res.Upstream.Body == strings.Join(tc.req.Body, "")
			if whole != tc.upstream {
				t.Fatalf("upstream got the whole request: %v, want %v (%+v)", whole, tc.upstream, res.Upstream)
			}
		})
	}
}

// A route's config replaces the filter's: an upload route with a larger limit.
func TestChainPerRoute(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("payload-limit", `{"max_request_body": 4}`)
	if err != nil {
		t.Fatal(err)
	}
	upload, err := r.WithRoute(`{"plugins":[{"name":"payload-limit","config":{"max_request_body":"1k"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	req := fakeenvoy.Request{Method: "POST", Body: []string{"0123456789"}}
	if res := r.Do(req); res.Status != 413 {
		t.Fatalf("default route: %d", res.Status)
	}
	if res := upload.Do(req); res.Status != 200 || res.Upstream.Body != "0123456789" {
		t.Fatalf("upload route: %d %+v", res.Status, res.Upstream)
	}
}

// BenchmarkChain: a request and response with a one-chunk body each, through
// the moe filter manager on the fake Envoy, against the empty chain in the
// same run.
func BenchmarkChain(b *testing.B) {
	run := func(b *testing.B, cfg string, hdr ...[2]string) {
		fb := fakeenvoy.NewBench(filtermanager.Factory, fakeenvoy.MustParseChain(b, cfg), hdr...)
		fb.WithBody = true
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if st := fb.Run(); st != envoy.Continue {
				b.Fatalf("status %v", st)
			}
		}
	}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) { run(b, `{"plugins":[]}`) })
	b.Run("request-limit-chunked", func(b *testing.B) {
		run(b, `{"plugins":[{"name":"payload-limit","config":{"max_request_body":"1m"}}]}`)
	})
	b.Run("request-limit-content-length", func(b *testing.B) {
		run(b, `{"plugins":[{"name":"payload-limit","config":{"max_request_body":"1m"}}]}`, [2]string{"content-length", "12"})
	})
	b.Run("request-and-response-limit", func(b *testing.B) {
		run(b, `{"plugins":[{"name":"payload-limit","config":{"max_request_body":"1m","max_response_body":"1m"}}]}`)
	})
}

// Refused on its Content-Length, a request never reaches the upstream.
func TestChainContentLengthNeverReachesTheUpstream(t *testing.T) {
	r, err := fakeenvoy.NewPlugin("payload-limit", `{"max_request_body": 10}`)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Do(fakeenvoy.Request{Method: "POST", Headers: [][2]string{{"content-length", "11"}}, Body: []string{"01234567890"}})
	if res.Status != 413 || res.Upstream != nil || res.LocalReply == nil || res.LocalReply.Details != "moe_reply{payload-limit}" {
		t.Fatalf("status %d upstream %+v reply %+v", res.Status, res.Upstream, res.LocalReply)
	}
}
