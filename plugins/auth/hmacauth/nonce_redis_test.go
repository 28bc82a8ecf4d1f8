package hmacauth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/plugins/internal/redisclient"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/redistest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// redisStore is a nonce_store section for a test Redis, with overrides of
// the store's fields and of its redis section ("timeout" etc.).
func redisStore(addr string, store map[string]any, redis map[string]any) map[string]any {
	r := map[string]any{"addrs": []string{addr}, "timeout": "500ms"} // generous: -race on a shared machine
	for k, v := range redis {
		r[k] = v
	}
	s := map[string]any{"type": "redis", "redis": r}
	for k, v := range store {
		s[k] = v
	}
	return s
}

// redisConfig parses a config with the Redis nonce store on the fixed test
// clock, destroyed when the test ends (as Envoy would).
func redisConfig(t *testing.T, store map[string]any) (*Config, *fakeframework.Env) {
	t.Helper()
	c, env := mustParse(t, testConfig(map[string]any{"nonce_store": store}))
	c.compiled.now = func() time.Time { return now }
	t.Cleanup(c.Destroy)
	return c, env
}

// sameRequest returns a function building the same signed request again
// (fresh header maps: the plugin writes the consumer header).
func sameRequest(keyID, secret, nonce string) func() *fakeframework.Request {
	return func() *fakeframework.Request {
		return signed(keyID, secret, "hmac-sha256", "GET", "/orders", stdList, "date", httpDate, "x-nonce", nonce)
	}
}

func wantStatus(t *testing.T, what string, c *Config, req *fakeframework.Request, code int, body string) {
	t.Helper()
	ctx, st := run(c, req)
	if code == 200 {
		if st != api.Continue || ctx.Replied != nil {
			t.Fatalf("%s: want pass, got %v %+v", what, st, ctx.Replied)
		}
		return
	}
	if st != api.Stop || ctx.Replied == nil || ctx.Replied.Code != code || strings.TrimSpace(ctx.Replied.Body) != body {
		t.Fatalf("%s: want %d %q, got %v %+v", what, code, body, st, ctx.Replied)
	}
}

// TestRedisNoncesAreSharedByInstances: two configs standing for two moe
// instances (different Redis client settings, so two clients and two
// connection pools) share one redis-server: a request accepted by one is a
// replay for the other inside the window.
func TestRedisNoncesAreSharedByInstances(t *testing.T) {
	r := redistest.Start(t)
	a, envA := redisConfig(t, redisStore(r.Addr(), nil, nil))
	b, envB := redisConfig(t, redisStore(r.Addr(), nil, map[string]any{"timeout": "400ms"}))
	if a.compiled.redis.client == b.compiled.redis.client {
		t.Fatal("the two configs share a client; the test wants two instances")
	}
	n := nextNonce()
	req := sameRequest("alice-1", aliceSecret, n)
	wantStatus(t, "first use on instance A", a, req(), 200, "")
	wantStatus(t, "replay to instance B", b, req(), 401, "replayed request (nonce already used)")
	wantStatus(t, "replay to instance A", a, req(), 401, "replayed request (nonce already used)")
	if envB.Count("denied_replay") != 1 || envA.Count("denied_replay") != 1 || envA.Count("allowed") != 1 {
		t.Errorf("metrics A %v B %v", envA.Values(), envB.Values())
	}
	// Another nonce, or the same nonce under another key, is another request.
	wantStatus(t, "new nonce on B", b, sameRequest("alice-1", aliceSecret, nextNonce())(), 200, "")
	wantStatus(t, "same nonce, other key, on B", b, sameRequest("bob", bobSecret, n)(), 200, "")
}

// TestRedisNonceKeys: one key per accepted nonce, prefix + 32 hex digits (a
// hash of key id and nonce: neither is stored in clear), value "1", living
// for the rest of the window plus clock_skew.
func TestRedisNonceKeys(t *testing.T) {
	r := redistest.Start(t)
	c, _ := redisConfig(t, redisStore(r.Addr(), map[string]any{"key_prefix": "test:nonce:"}, nil))
	nonce := "secret-looking-nonce-" + nextNonce()
	wantStatus(t, "signed", c, sameRequest("alice-1", aliceSecret, nonce)(), 200, "")
	v, err := r.Do("KEYS", "*")
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := v.([]any)
	if len(keys) != 1 {
		t.Fatalf("keys %v, want one", v)
	}
	k := fmt.Sprint(keys[0])
	if !regexp.MustCompile(`^test:nonce:[0-9a-f]{32}$`).MatchString(k) || strings.Contains(k, "nonce-") || strings.Contains(k, "alice") {
		t.Fatalf("key %q", k)
	}
	if val, _ := r.Do("GET", k); val != "1" {
		t.Errorf("value %v", val)
	}
	// The request is dated now (the test clock): 300s left in the window, plus
	// 300s for instances whose clocks lag behind.
	pttl, err := r.Do("PTTL", k)
	if ms, _ := pttl.(int64); err != nil || ms <= 599_000 || ms > 600_000 {
		t.Errorf("PTTL %v %v, want just under 600000", pttl, err)
	}
	// A request dated 100s ago has 200s left: 500s in Redis.
	old := signed("alice-1", aliceSecret, "hmac-sha256", "GET", "/", stdList, "date", now.Add(-100*time.Second).Format(http.TimeFormat), "x-nonce", nextNonce())
	wantStatus(t, "older date", c, old, 200, "")
	if ms := c.compiled.redis.ttl(now, now.Add(200*time.Second)); ms != 500_000 {
		t.Errorf("ttl %d ms, want 500000", ms)
	}
	if ms := c.compiled.redis.ttl(now, now.Add(-time.Hour)); ms != 1 {
		t.Errorf("ttl of an expired window %d ms, want the 1ms floor", ms)
	}
}

func TestRedisNonceStoreNeedsAndLifecycle(t *testing.T) {
	r := redistest.Start(t)
	mem, _ := newTestConfig(t, nil)
	if mem.Needs().MayBlock != 0 {
		t.Fatal("the memory store must stay on the worker thread")
	}
	before := redisclient.Live()
	c, _, err := parse(t, mustJSON(t, testConfig(map[string]any{"nonce_store": redisStore(r.Addr(), nil, map[string]any{"timeout": "321ms"}), "validate_request_body": true})), false)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Needs(); n.MayBlock != api.BlockReceive || n.RequestBody != api.WholeBody {
		t.Fatalf("needs %+v, want MayBlock for the request phase and the whole body", n)
	}
	if redisclient.Live() != before+1 {
		t.Fatalf("live clients %d, want %d", redisclient.Live(), before+1)
	}
	c.Destroy()
	c.Destroy() // idempotent
	if redisclient.Live() != before {
		t.Fatalf("Destroy did not release the Redis client: %d live", redisclient.Live())
	}
	// nonce_header "" turns replay protection off: no store, no blocking.
	off, _ := newTestConfig(t, map[string]any{"nonce_header": ""})
	if off.compiled.replay != nil || off.Needs().MayBlock != 0 {
		t.Fatal("replay protection off must not set up a store")
	}
}

func TestRedisNonceStoreConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra map[string]any
		field string
	}{
		{"unknown type", map[string]any{"nonce_store": map[string]any{"type": "etcd"}}, "nonce_store.type"},
		{"redis without addrs", map[string]any{"nonce_store": map[string]any{"type": "redis"}}, "nonce_store.redis.addrs"},
		{"a redis section with the memory store", map[string]any{"nonce_store": map[string]any{"redis": map[string]any{"addrs": []string{"127.0.0.1:1"}}}}, "nonce_store.redis"},
		{"redis with replay protection off", map[string]any{"nonce_header": "", "nonce_store": redisStore("127.0.0.1:1", nil, nil)}, "nonce_store.type"},
		{"hash tag in the key prefix", map[string]any{"nonce_store": redisStore("127.0.0.1:1", map[string]any{"key_prefix": "{n}:"}, nil)}, "nonce_store.key_prefix"},
		{"unknown failure policy", map[string]any{"nonce_store": redisStore("127.0.0.1:1", map[string]any{"failure_policy": "local"}, nil)}, "nonce_store.failure_policy"},
		{"failure status 200", map[string]any{"nonce_store": redisStore("127.0.0.1:1", map[string]any{"failure_status": 200}, nil)}, "nonce_store.failure_status"},
		{"redis timeout 0", map[string]any{"nonce_store": redisStore("127.0.0.1:1", nil, map[string]any{"timeout": "0s"})}, "nonce_store.redis.timeout"},
		{"bad redis address", map[string]any{"nonce_store": redisStore("localhost", nil, nil)}, "nonce_store.redis.addrs[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parse(t, mustJSON(t, testConfig(tc.extra)), false)
			fe, ok := err.(*api.FieldError)
			if !ok || fe.Field != tc.field {
				t.Fatalf("got %v (%T), want field %q", err, err, tc.field)
			}
			// moectl validate (Init in check-only mode) reports the same.
			_, _, err = fakeframework.Check[*Config](t, plugin, newConfig, mustJSON(t, testConfig(tc.extra)), false)
			if fe, ok := err.(*api.FieldError); !ok || fe.Field != tc.field {
				t.Fatalf("checking: got %v (%T), want field %q", err, err, tc.field)
			}
		})
	}
}

// ---- failure behaviour, through the real framework (the phase runs in a
// goroutine: MayBlock) over the fake Envoy, with real time ----

func redisRunner(t *testing.T, store map[string]any) *fakeenvoy.Runner {
	t.Helper()
	run, err := fakeenvoy.NewPlugin(Name, testConfig(map[string]any{"nonce_store": store}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Config().(api.Destroyable).Destroy() })
	return run
}

func stat(name string) uint64 { return fakeenvoy.Stats.Counter("moe_hmac_auth_" + name) }

// send signs a fresh request (or resends req) and checks status and body.
func send(t *testing.T, run *fakeenvoy.Runner, req fakeenvoy.Request, status int, body string, max time.Duration) {
	t.Helper()
	start := time.Now()
	res := run.Do(req)
	took := time.Since(start)
	if res.Status != status || (body != "" && res.Body != body+"\n") || len(res.Violations) > 0 {
		t.Fatalf("got %d %q %v, want %d %q", res.Status, res.Body, res.Violations, status, body)
	}
	if status == 200 && res.Continues == 0 {
		t.Error("the request phase ran on the worker thread with the Redis store")
	}
	if took > max {
		t.Errorf("request took %v, want at most %v", took, max)
	}
}

func TestRedisDownFailsClosedByDefault(t *testing.T) {
	r := redistest.Start(t)
	run := redisRunner(t, redisStore(r.Addr(), nil, nil))
	send(t, run, signedAs("alice-1", aliceSecret, "/"), 200, "", 2*time.Second)
	r.Stop()
	errs, denied, allowed := stat("nonce_store_errors"), stat("denied_nonce_store_unavailable"), stat("allowed")
	logMark := fakeenvoy.MarkLogs()
	for i := 0; i < 10; i++ {
		send(t, run, signedAs("alice-1", aliceSecret, "/"), 503, "replay check unavailable, retry later", 500*time.Millisecond)
	}
	if d := stat("nonce_store_errors") - errs; d != 10 {
		t.Errorf("nonce_store_errors +%d, want +10", d)
	}
	if d := stat("denied_nonce_store_unavailable") - denied; d != 10 {
		t.Errorf("denied_nonce_store_unavailable +%d, want +10", d)
	}
	if stat("allowed") != allowed {
		t.Error("a request was allowed with Redis down under fail_closed")
	}
	if n := len(fakeenvoy.LogsSince(logMark, "redis call failed, applying failure_policy fail_closed")); n < 1 || n > 5 {
		t.Errorf("%d log lines about the outage, want a few (at most one per second)", n)
	}
	// Unsigned or badly signed requests never reach Redis: still 401.
	send(t, run, signedAs("alice-1", bobSecret, "/"), 401, "invalid signature", 500*time.Millisecond)

	// Redis is back: signed requests pass again, replays are refused again.
	r.Start()
	var req fakeenvoy.Request
	if !tb.Poll(10*time.Second, func() bool {
		req = signedAs("alice-1", aliceSecret, "/")
		return run.Do(req).Status == 200
	}) {
		t.Fatal("not recovered 10s after Redis restarted")
	}
	send(t, run, req, 401, "replayed request (nonce already used)", 2*time.Second)
}

func TestRedisDownFailOpenLetsSignedRequestsThrough(t *testing.T) {
	r := redistest.Start(t)
	run := redisRunner(t, redisStore(r.Addr(), map[string]any{"failure_policy": "fail_open"}, nil))
	send(t, run, signedAs("alice-1", aliceSecret, "/"), 200, "", 2*time.Second)
	r.Stop()
	open, errs := stat("nonce_store_failed_open"), stat("nonce_store_errors")
	req := signedAs("alice-1", aliceSecret, "/")
	send(t, run, req, 200, "", 500*time.Millisecond)
	// Without its store the replay check cannot see the replay: fail_open's price.
	send(t, run, req, 200, "", 500*time.Millisecond)
	if d := stat("nonce_store_failed_open") - open; d != 2 {
		t.Errorf("nonce_store_failed_open +%d, want +2", d)
	}
	if d := stat("nonce_store_errors") - errs; d != 2 {
		t.Errorf("nonce_store_errors +%d, want +2", d)
	}
	// A bad signature is still refused: fail_open only skips the replay check.
	send(t, run, signedAs("alice-1", bobSecret, "/"), 401, "invalid signature", 500*time.Millisecond)
}

// TestRedisSlowAppliesThePolicyAfterTheTimeout pauses Redis (CLIENT PAUSE,
// Redis >= 6.2 for ALL) so calls hang: each request must end after about
// redis.timeout, as a timeout.
func TestRedisSlowAppliesThePolicyAfterTheTimeout(t *testing.T) {
	r := redistest.Start(t)
	closed := redisRunner(t, redisStore(r.Addr(), nil, map[string]any{"timeout": "80ms"}))
	open := redisRunner(t, redisStore(r.Addr(), map[string]any{"failure_policy": "fail_open"}, map[string]any{"timeout": "90ms"}))
	// Connect first: the pause then hits a command, not a dial.
	send(t, closed, signedAs("alice-1", aliceSecret, "/"), 200, "", 2*time.Second)
	send(t, open, signedAs("alice-1", aliceSecret, "/"), 200, "", 2*time.Second)
	if _, err := r.Do("CLIENT", "PAUSE", "1500", "ALL"); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	timeouts := stat("nonce_store_timeouts")
	for _, tc := range []struct {
		run    *fakeenvoy.Runner
		status int
		body   string
	}{{closed, 503, "replay check unavailable, retry later"}, {open, 200, ""}} {
		start := time.Now()
		send(t, tc.run, signedAs("alice-1", aliceSecret, "/"), tc.status, tc.body, 400*time.Millisecond)
		if took := time.Since(start); took < 70*time.Millisecond {
			t.Errorf("answered after %v, before the Redis timeout", took)
		}
	}
	if d := stat("nonce_store_timeouts") - timeouts; d != 2 {
		t.Errorf("nonce_store_timeouts +%d, want +2", d)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
