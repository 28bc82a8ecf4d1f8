package hmacauth

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/redistest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

const (
	e2eKey    = "alice-1"
	e2eSecret = "alice-secret-please-rotate-me"
)

// e2eRequest signs a request as alice-1 with the independent client signer.
func e2eRequest(t *testing.T, base, method, path, body string, date time.Time, nonce string, list []string, extra ...string) *http.Request {
	t.Helper()
	return e2eRequestAs(t, e2eKey, e2eSecret, base, method, path, body, date, nonce, list, extra...)
}

func e2eRequestAs(t *testing.T, keyID, secret, base, method, path, body string, date time.Time, nonce string, list []string, extra ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hs := [][2]string{{"date", date.UTC().Format(http.TimeFormat)}, {"x-nonce", nonce}}
	for i := 0; i+1 < len(extra); i += 2 {
		hs = append(hs, [2]string{extra[i], extra[i+1]})
	}
	for _, kv := range hs {
		req.Header.Add(kv[0], kv[1])
	}
	req.Header.Set("authorization", clientSign(keyID, secret, "hmac-sha256", method, path, hs, list))
	return req
}

// TestE2EExample runs envoy/examples/hmac-auth.yaml through moe-host and the
// real libgolang.so.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/hmac-auth.yaml")
	nonce := func() string { return fmt.Sprintf("e2e-%d", time.Now().UnixNano()) }
	now := time.Now()

	resp, body := hosttest.Do(t, mustReq(t, "GET", h.URL+"/"))
	if resp.StatusCode != 401 || body != "missing signature\n" ||
		resp.Header.Get("www-authenticate") != `Signature realm="moe", headers="@request-target date x-nonce"` {
		t.Fatalf("unsigned: %d %q %q", resp.StatusCode, body, resp.Header.Get("www-authenticate"))
	}

	n := nonce()
	resp, body = hosttest.Do(t, e2eRequest(t, h.URL, "GET", "/orders?id=42", "", now, n, stdList, "x-consumer-name", "root"))
	if resp.StatusCode != 200 {
		t.Fatalf("signed: %d %q", resp.StatusCode, body)
	}
	e := hosttest.DecodeEcho(t, resp)
	if e.Header("x-consumer-name") != "alice" || len(e.Values("X-Consumer-Name")) != 1 || e.Header("authorization") != "" {
		t.Fatalf("upstream headers: %v", e.Headers)
	}

	// carol is a chain-level consumer (the moe config's consumers:, auth.hmac-auth).
	resp, body = hosttest.Do(t, e2eRequestAs(t, "carol-1", "carol-secret-0123456789abcdef", h.URL, "GET", "/c", "", now, nonce(), stdList, "x-consumer-name", "alice"))
	if resp.StatusCode != 200 {
		t.Fatalf("chain-level consumer: %d %q", resp.StatusCode, body)
	}
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "carol" || len(e.Values("X-Consumer-Name")) != 1 || e.Header("authorization") != "" {
		t.Fatalf("chain-level consumer upstream headers: %v", e.Headers)
	}

	// The same request again: a replay.
	resp, body = hosttest.Do(t, e2eRequest(t, h.URL, "GET", "/orders?id=42", "", now, n, stdList))
	if resp.StatusCode != 401 || body != "replayed request (nonce already used)\n" {
		t.Fatalf("replay: %d %q", resp.StatusCode, body)
	}

	// A signed body with its digest.
	payload := `{"amount":100}`
	sum := sha256.Sum256([]byte(payload))
	digest := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
	withDigest := append(append([]string{}, stdList...), "content-digest")
	resp, body = hosttest.Do(t, e2eRequest(t, h.URL, "POST", "/pay", payload, now, nonce(), withDigest, "content-digest", digest))
	if resp.StatusCode != 200 {
		t.Fatalf("signed body: %d %q", resp.StatusCode, body)
	}
	if e := hosttest.DecodeEcho(t, resp); e.Body != payload {
		t.Fatalf("body upstream %q", e.Body)
	}

	for _, tc := range []struct {
		name   string
		req    *http.Request
		code   int
		reason string
	}{
		{"tampered body", e2eRequest(t, h.URL, "POST", "/pay", `{"amount":999}`, now, nonce(), withDigest, "content-digest", digest), 401, "body digest missing or mismatched"},
		{"body without digest", e2eRequest(t, h.URL, "POST", "/pay", payload, now, nonce(), stdList), 401, "body digest missing or mismatched"},
		{"expired date", e2eRequest(t, h.URL, "GET", "/", "", now.Add(-10*time.Minute), nonce(), stdList), 401, "request expired or clock skew too large"},
		{"date in the future", e2eRequest(t, h.URL, "GET", "/", "", now.Add(10*time.Minute), nonce(), stdList), 401, "request expired or clock skew too large"},
		{"nonce not signed", e2eRequest(t, h.URL, "GET", "/", "", now, nonce(), []string{"@request-target", "date"}), 401, "missing signed header: x-nonce"},
		{"body over max_body_bytes", e2eRequest(t, h.URL, "POST", "/pay", strings.Repeat("x", 70000), now, nonce(), stdList), 413, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := hosttest.Do(t, tc.req)
			if resp.StatusCode != tc.code || (tc.reason != "" && body != tc.reason+"\n") {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
		})
	}

	t.Run("tampered path", func(t *testing.T) {
		req := e2eRequest(t, h.URL, "GET", "/orders?id=42", "", now, nonce(), stdList)
		req.URL.RawQuery = "id=43"
		if resp, body := hosttest.Do(t, req); resp.StatusCode != 401 || body != "invalid signature\n" {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		req := mustReq(t, "GET", h.URL+"/")
		hs := [][2]string{{"date", now.UTC().Format(http.TimeFormat)}, {"x-nonce", nonce()}}
		for _, kv := range hs {
			req.Header.Set(kv[0], kv[1])
		}
		req.Header.Set("authorization", clientSign("alice-1", "not-the-secret-0123456789", "hmac-sha256", "GET", "/", hs, stdList))
		if resp, body := hosttest.Do(t, req); resp.StatusCode != 401 || body != "invalid signature\n" {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})

	resp, _ = hosttest.Do(t, mustReq(t, "GET", h.URL+"/public/x"))
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "guest" {
		t.Fatalf("anonymous route: %v", e.Headers)
	}
	// The route lists no consumers: it keeps the filter's keys, chain consumers included.
	resp, _ = hosttest.Do(t, e2eRequestAs(t, "carol-1", "carol-secret-0123456789abcdef", h.URL, "GET", "/public/x", "", now, nonce(), stdList))
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "carol" {
		t.Fatalf("chain-level consumer on the anonymous route: %v", e.Headers)
	}

	for name, min := range map[string]int64{
		"moe_hmac_auth_allowed": 4, "moe_hmac_auth_anonymous": 1, "moe_hmac_auth_denied_missing": 1,
		"moe_hmac_auth_denied_replay": 1, "moe_hmac_auth_denied_expired": 2, "moe_hmac_auth_denied_bad_digest": 2,
		"moe_hmac_auth_denied_bad_signature": 2, "moe_hmac_auth_denied_missing_header": 1,
	} {
		if got := h.Counter(t, name); got < min {
			t.Errorf("%s = %d, want >= %d", name, got, min)
		}
	}
}

func mustReq(t *testing.T, method, url string) *http.Request {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestE2EBadConfigIsRefused(t *testing.T) {
	out := hosttest.StartChainExpectFailure(t, hosttest.Chain{Plugins: []hosttest.Plugin{{
		Name:   "hmac-auth",
		Config: map[string]any{"consumers": []map[string]any{{"name": "a", "keys": []map[string]any{{"key_id": "k", "secret": "tiny-s3cret"}}}}},
	}}})
	for _, want := range []string{"hmac-auth", "consumers[0].keys[0].secret", "too short"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "tiny-s3cret") {
		t.Errorf("the refusal prints the secret:\n%s", out)
	}
}

// TestE2EShellSigner runs the README's reference client (sign.sh: openssl +
// curl) against the example: a third, independent implementation of the
// signing string.
func TestE2EShellSigner(t *testing.T) {
	for _, tool := range []string{"sh", "openssl", "curl", "od"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	h := hosttest.StartExample(t, "envoy/examples/hmac-auth.yaml")
	cmd := exec.Command("sh", "sign.sh", "GET", h.URL+"/orders?id=42")
	cmd.Env = append(os.Environ(), "KEY_ID=alice-1", "SECRET="+e2eSecret)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sign.sh: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "HTTP/1.1 200") || !strings.Contains(string(out), `"x-consumer-name":["alice"]`) {
		t.Fatalf("sign.sh request refused:\n%s", out)
	}

	// PRINT=1 prints the signed curl command: sent twice, the second is a replay
	// (what the example's comment tells users to try).
	cmd = exec.Command("sh", "sign.sh", "GET", h.URL+"/")
	cmd.Env = append(os.Environ(), "PRINT=1", "KEY_ID=alice-1", "SECRET="+e2eSecret)
	line, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(line), "curl ") {
		t.Fatalf("sign.sh PRINT=1: %v %q", err, line)
	}
	for i, want := range []string{"HTTP/1.1 200", "HTTP/1.1 401"} {
		out, err := exec.Command("sh", "-c", string(line)).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), want) {
			t.Fatalf("printed request, send %d: %v\n%s", i+1, err, out)
		}
		if i == 1 && !strings.Contains(string(out), "replayed request") {
			t.Fatalf("second send is not refused as a replay:\n%s", out)
		}
	}
}

// TestE2ERedisNoncesAcrossInstances runs envoy/examples/hmac-auth-redis.yaml
// twice, as two moe-host processes ("two Envoy instances") sharing one
// redis-server started by the test: a request accepted by the first is a
// replay for the second inside the window. Then Redis goes down: the default
// route fails closed (503), /lenient/ fails open; and it comes back.
func TestE2ERedisNoncesAcrossInstances(t *testing.T) {
	r := redistest.Start(t)
	opts := hosttest.ExampleOptions{Replace: map[string]string{"127.0.0.1:6379": r.Addr()}}
	a := hosttest.StartExample(t, "envoy/examples/hmac-auth-redis.yaml", opts)
	b := hosttest.StartExample(t, "envoy/examples/hmac-auth-redis.yaml", opts)
	nonce := func() string { return fmt.Sprintf("e2e-redis-%d", time.Now().UnixNano()) }
	now := time.Now()

	n := nonce()
	resp, body := hosttest.Do(t, e2eRequest(t, a.URL, "GET", "/orders", "", now, n, stdList))
	if resp.StatusCode != 200 {
		t.Fatalf("instance A: %d %q", resp.StatusCode, body)
	}
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") != "alice" || e.Header("authorization") != "" {
		t.Fatalf("instance A upstream headers: %v", e.Headers)
	}
	for _, h := range []*hosttest.Host{b, a} {
		resp, body = hosttest.Do(t, e2eRequest(t, h.URL, "GET", "/orders", "", now, n, stdList))
		if resp.StatusCode != 401 || body != "replayed request (nonce already used)\n" {
			t.Fatalf("replay to %s: %d %q", h.URL, resp.StatusCode, body)
		}
	}
	// The per-route config shares the Redis and the key prefix: a replay on
	// another route of another instance is refused too.
	resp, body = hosttest.Do(t, e2eRequest(t, b.URL, "GET", "/lenient/x", "", now, n, stdList))
	if resp.StatusCode != 401 || body != "replayed request (nonce already used)\n" {
		t.Fatalf("replay to instance B on /lenient/ (another path, so another signature): %d %q", resp.StatusCode, body)
	}
	if resp, body = hosttest.Do(t, e2eRequest(t, b.URL, "GET", "/orders", "", now, nonce(), stdList)); resp.StatusCode != 200 {
		t.Fatalf("new nonce on instance B: %d %q", resp.StatusCode, body)
	}
	if got := b.Counter(t, "moe_hmac_auth_denied_replay"); got < 2 {
		t.Errorf("instance B denied_replay = %d, want >= 2", got)
	}

	r.Stop()
	resp, body = hosttest.Do(t, e2eRequest(t, a.URL, "GET", "/orders", "", now, nonce(), stdList))
	if resp.StatusCode != 503 || body != "replay check unavailable, retry later\n" {
		t.Fatalf("Redis down, fail_closed: %d %q", resp.StatusCode, body)
	}
	resp, body = hosttest.Do(t, e2eRequest(t, a.URL, "GET", "/lenient/x", "", now, nonce(), stdList))
	if resp.StatusCode != 200 {
		t.Fatalf("Redis down, fail_open route: %d %q", resp.StatusCode, body)
	}
	for name, min := range map[string]int64{
		"moe_hmac_auth_nonce_store_errors": 2, "moe_hmac_auth_denied_nonce_store_unavailable": 1, "moe_hmac_auth_nonce_store_failed_open": 1,
	} {
		if got := a.Counter(t, name); got < min {
			t.Errorf("%s = %d, want >= %d", name, got, min)
		}
	}

	r.Start()
	code := 0
	if !tb.Poll(10*time.Second, func() bool {
		resp, _ := hosttest.Do(t, e2eRequest(t, a.URL, "GET", "/orders", "", time.Now(), nonce(), stdList))
		code = resp.StatusCode
		return code == 200
	}) {
		t.Fatalf("not recovered 10s after Redis restarted: %d", code)
	}
}
