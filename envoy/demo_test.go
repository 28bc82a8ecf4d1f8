// Package envoy holds the demo and example bootstraps; this test runs the demo that `make run`
// serves through moe-host and replays the requests the README and envoy/envoy.yaml show.
package envoy

import (
	"net/http"
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

func TestDemoAnswersTheDocumentedRequests(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/envoy.yaml")
	cases := []struct {
		name, method, path, key string
		want                    int
		wantConsumer            string
	}{
		{"public route needs no key", "GET", "/public/hello", "", 200, ""},
		{"missing key", "GET", "/hello", "", 401, ""},
		{"user may read", "GET", "/hello", "bob-demo-key", 200, "bob"},
		{"user may not write", "POST", "/hello", "bob-demo-key", 403, ""},
		{"admin may write", "POST", "/hello", "alice-demo-key", 200, "alice"},
		{"users never reach /admin", "GET", "/admin/x", "bob-demo-key", 403, ""},
		{"admins reach /admin", "GET", "/admin/x", "alice-demo-key", 200, "alice"},
		{"wrong key", "GET", "/hello", "nope", 401, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hdr []string
			if c.key != "" {
				hdr = []string{"x-api-key", c.key}
			}
			resp, body := hosttest.Send(t, c.method, h.URL+c.path, "", hdr...)
			if resp.StatusCode != c.want {
				t.Fatalf("%s %s: status %d, want %d (%s)", c.method, c.path, resp.StatusCode, c.want, body)
			}
			if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("www-authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
			if c.wantConsumer != "" {
				req, err := http.NewRequest(c.method, h.URL+c.path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("x-api-key", c.key)
				resp, _ := hosttest.Do(t, req)
				e := hosttest.DecodeEcho(t, resp)
				if got := e.Header("x-consumer-name"); got != c.wantConsumer {
					t.Errorf("upstream saw x-consumer-name %q, want %q", got, c.wantConsumer)
				}
				if e.Header("x-api-key") != "" {
					t.Errorf("the API key reached the upstream (hide_credentials)")
				}
			}
		})
	}
}

func TestDemoLimitsEachClient(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/envoy.yaml")
	limited := 0
	for i := 0; i < 80; i++ { // burst 40 at 20/s: a tight loop of 80 must see 429s
		resp, _ := hosttest.Get(t, h.URL+"/public/")
		if resp.StatusCode == http.StatusTooManyRequests {
			limited++
		} else if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	if limited == 0 {
		t.Fatalf("80 back-to-back requests from one client were never limited")
	}
}
