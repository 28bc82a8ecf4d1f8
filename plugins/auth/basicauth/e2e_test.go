package basicauth

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

const challenge = `Basic realm="example", charset="UTF-8"`

// TestE2EExample runs envoy/examples/basic-auth.yaml through moe-host and the
// real libgolang.so with the requests listed at the top of that file.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/basic-auth.yaml")

	resp, body := hosttest.Get(t, h.URL+"/")
	if resp.StatusCode != 401 || resp.Header.Get("www-authenticate") != challenge || body != "missing credentials\n" {
		t.Fatalf("no credentials: %d %q %q", resp.StatusCode, resp.Header.Get("www-authenticate"), body)
	}
	for user, pw := range map[string]string{"alice": "alice-password", "carol": "carol-password", "bob": "bob-password"} {
		resp, body := hosttest.Get(t, h.URL+"/", "authorization", basic(user+":"+pw), "x-consumer-name", "root")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %q", user, resp.StatusCode, body)
		}
		e := hosttest.DecodeEcho(t, resp)
		if e.Header("x-consumer-name") != user || len(e.Values("X-Consumer-Name")) != 1 || e.Header("authorization") != "" {
			t.Fatalf("%s upstream headers: %v", user, e.Headers)
		}
	}

	// dave is a chain-level consumer (the moe config's consumers:, auth.basic-auth) with a
	// user name of its own and a bcrypt hash.
	resp, body = hosttest.Get(t, h.URL+"/", "authorization", basic("dave@example.com:dave-password"), "x-consumer-name", "alice")
	if resp.StatusCode != 200 {
		t.Fatalf("chain-level consumer: %d %q", resp.StatusCode, body)
	}
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "dave" || len(e.Values("X-Consumer-Name")) != 1 || e.Header("authorization") != "" {
		t.Fatalf("chain-level consumer upstream headers: %v", e.Headers)
	}
	if resp, _ := hosttest.Get(t, h.URL+"/", "authorization", basic("dave:dave-password")); resp.StatusCode != 401 {
		t.Fatalf("the consumer name is not dave's user name: %d", resp.StatusCode)
	}

	for _, tc := range []struct{ name, auth, reason string }{
		{"wrong bcrypt password", basic("alice:alice-passwor"), "invalid credentials"},
		{"wrong argon2id password", basic("carol:x"), "invalid credentials"},
		{"wrong clear-text password", basic("bob:bob-password2"), "invalid credentials"},
		{"malformed base64", "Basic !!!", "malformed credentials"},
		{"no colon", basic("alicealice-password"), "malformed credentials"},
		{"CRLF inside the credential", basic("alice\r\nx-admin: true:alice-password"), "malformed credentials"},
		{"invalid UTF-8", basic("alice:\xc3\x28"), "malformed credentials"},
		{"oversized header", "Basic " + strings.Repeat("YWFh", 1200), "credentials too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := hosttest.Get(t, h.URL+"/", "authorization", tc.auth)
			if resp.StatusCode != 401 || body != tc.reason+"\n" || resp.Header.Get("www-authenticate") != challenge {
				t.Fatalf("got %d %q %q", resp.StatusCode, body, resp.Header.Get("www-authenticate"))
			}
			if strings.Contains(body, "alice") || strings.Contains(body, "password") {
				t.Fatalf("body echoes the credential: %q", body)
			}
		})
	}

	// Hashed passwords are verified off the worker thread: many concurrent
	// requests, right and wrong, each get the right answer.
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			auth, want := basic("alice:alice-password"), 200
			if i%4 == 0 {
				auth, want = basic("alice:nope"), 401
			}
			req, _ := http.NewRequest("GET", h.URL+"/", nil)
			req.Header.Set("authorization", auth)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				errs <- "unexpected status " + resp.Status
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	resp, _ = hosttest.Get(t, h.URL+"/public/")
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "guest" {
		t.Fatalf("anonymous route: %v", e.Headers)
	}
	resp, _ = hosttest.Get(t, h.URL+"/public/", "authorization", basic("bob:bob-password"))
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "bob" {
		t.Fatalf("credentials on the anonymous route: %v", e.Headers)
	}
	resp, _ = hosttest.Get(t, h.URL+"/public/", "authorization", basic("dave@example.com:dave-password"))
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "dave" {
		t.Fatalf("chain-level consumer on the anonymous route: %v", e.Headers)
	}

	for name, min := range map[string]int64{
		"moe_basic_auth_allowed": 36, "moe_basic_auth_anonymous": 1, "moe_basic_auth_denied_missing": 1,
		"moe_basic_auth_denied_invalid": 14, "moe_basic_auth_denied_malformed": 4, "moe_basic_auth_denied_too_large": 1,
	} {
		if got := h.Counter(t, name); got < min {
			t.Errorf("%s = %d, want >= %d", name, got, min)
		}
	}
}

func TestE2EBadConfigIsRefused(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{Plugins: []hosttest.Plugin{{
		Name:   "basic-auth",
		Config: map[string]any{"consumers": []map[string]any{{"name": "a", "password_hash": "$2a$04$not-a-real-hash-secret"}}},
	}}})
	for _, want := range []string{"basic-auth", "consumers[0].password_hash", "malformed bcrypt hash"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
