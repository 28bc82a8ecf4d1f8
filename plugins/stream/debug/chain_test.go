package debug_test

import (
	"strings"
	"testing"
	"time"

	_ "github.com/moeproxy/moe/plugins/auth/keyauth"
	_ "github.com/moeproxy/moe/plugins/limiting/limitreq"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

const secret = "s3cret-debug-token-0123"

// debug is listed last here on purpose: BeforeRoute moves it first, so it
// still traces every other plugin.
const chainJSON = `{"plugins":[
	{"name":"key-auth","config":{"sources":["header:x-api-key"],"consumers":[{"name":"alice","keys":["alice-key-0123456789"]}]}},
	{"name":"limit-req","config":{"rate":0.001,"burst":1,"key":"$consumer"}},
	{"name":"debug","config":{"secret":"` + secret + `","slow_threshold":"30ms"}}
]}`

func TestTraceThroughTheChain(t *testing.T) {
	r, err := fakeenvoy.NewChain(chainJSON)
	if err != nil {
		t.Fatal(err)
	}
	key := [2]string{"x-api-key", "alice-key-0123456789"}
	dbg := [2]string{"x-moe-debug", secret}
	res := r.Do(fakeenvoy.Request{Headers: [][2]string{key, dbg}})
	tr := first(res.Headers["x-moe-debug-trace"])
	if res.Status != 200 || len(res.Violations) > 0 {
		t.Fatalf("%d %v", res.Status, res.Violations)
	}
	for _, want := range []string{"moe;dur=", `key-auth;dur=`, `;recv=`, `decision=allow;desc="consumer alice"`, "limit-req;dur="} {
		if !strings.Contains(tr, want) {
			t.Errorf("trace %q lacks %q", tr, want)
		}
	}
	if strings.Contains(tr, "debug;") {
		t.Errorf("the plugin lists itself: %q", tr)
	}
	if _, ok := res.Upstream.Headers["x-moe-debug"]; ok {
		t.Error("the secret reached the upstream")
	}
	// The second request of alice is limited: the trace says who refused it.
	res = r.Do(fakeenvoy.Request{Headers: [][2]string{key, dbg}})
	tr = first(res.Headers["x-moe-debug-trace"])
	if res.Status != 429 || !strings.Contains(tr, "limit-req;dur=") || !strings.Contains(tr, "decision=deny;status=429") {
		t.Fatalf("limited: %d %q", res.Status, tr)
	}
	// A refusal by the first plugin, with a wrong secret: no trace.
	res = r.Do(fakeenvoy.Request{Headers: [][2]string{{"x-moe-debug", "not-the-secret-at-all"}}})
	if res.Status != 401 || res.Headers["x-moe-debug-trace"] != nil || res.Upstream != nil {
		t.Fatalf("wrong secret: %d %v", res.Status, res.Headers)
	}
	res = r.Do(fakeenvoy.Request{Headers: [][2]string{dbg}})
	if tr := first(res.Headers["x-moe-debug-trace"]); res.Status != 401 || !strings.Contains(tr, `key-auth;dur=`) || !strings.Contains(tr, `decision=deny;status=401;desc="missing API key"`) {
		t.Fatalf("refused by key-auth: %d %q", res.Status, tr)
	}
}

func TestSlowRequestsAreLogged(t *testing.T) {
	logMark := fakeenvoy.MarkLogs()
	r, err := fakeenvoy.NewChain(chainJSON)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Do(fakeenvoy.Request{Path: "/orders?api_key=hidden", Headers: [][2]string{{"x-api-key", "alice-key-0123456789"}, {"x-moe-debug", secret}},
		Upstream: func(*fakeenvoy.Upstream) fakeenvoy.Response {
			time.Sleep(40 * time.Millisecond)
			return fakeenvoy.Response{Status: 200}
		}})
	if res.Status != 200 {
		t.Fatal(res.Status)
	}
	lines := fakeenvoy.LogsSince(logMark, "slow request: GET /orders took")
	if len(lines) != 1 {
		t.Fatalf("slow log lines %q", lines)
	}
	for _, want := range []string{"(slow_threshold 30ms), status 200; plugins: moe;dur=", `key-auth;dur=`, `desc="consumer alice"`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %q lacks %q", lines[0], want)
		}
	}
	for _, never := range []string{secret, "hidden", "alice-key"} {
		if strings.Contains(lines[0], never) {
			t.Errorf("log line shows %q: %s", never, lines[0])
		}
	}
	// A fast request is not logged (the limiter refuses it at once).
	r.Do(fakeenvoy.Request{Path: "/fast", Headers: [][2]string{{"x-api-key", "alice-key-0123456789"}}})
	if n := len(fakeenvoy.LogsSince(logMark, "slow request: GET /fast")); n != 0 {
		t.Fatalf("fast request logged")
	}
}

// Per route: the plugin disabled on the chain and enabled on one route.
func TestPerRoute(t *testing.T) {
	r, err := fakeenvoy.NewChain(`{"plugins":[{"name":"debug","disabled":true,"config":{"secret":"` + secret + `"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	on, err := r.WithRoute(`{"plugins":[{"name":"debug"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	req := fakeenvoy.Request{Headers: [][2]string{{"x-moe-debug", secret}}}
	if res := r.Do(req); res.Headers["x-moe-debug-trace"] != nil {
		t.Errorf("disabled: %v", res.Headers)
	}
	if res := on.Do(req); first(res.Headers["x-moe-debug-trace"]) != "moe;dur=0.000" {
		t.Errorf("enabled on the route: %v", res.Headers)
	}
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// BenchmarkChain: per-request cost against the empty chain in the same run.
// key-auth + limit-req are the traced plugins; "with-plugin" adds debug.
func BenchmarkChain(b *testing.B) {
	const rest = `{"name":"key-auth","config":{"sources":["header:x-api-key"],"consumers":[{"name":"alice","keys":["alice-key-0123456789"]}]}},
		{"name":"limit-req","config":{"rate":1e9,"burst":1000000,"key":"$consumer"}}`
	key := [2]string{"x-api-key", "alice-key-0123456789"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), key)
	})
	b.Run("key-auth+limit-req", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[`+rest+`]}`), key)
	})
	b.Run("debug+key-auth+limit-req-no-debug-header", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"debug","config":{"secret":"`+secret+`"}},`+rest+`]}`), key)
	})
	b.Run("debug+key-auth+limit-req-traced-request", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"debug","config":{"secret":"`+secret+`"}},`+rest+`]}`), key, [2]string{"x-moe-debug", secret})
	})
	b.Run("debug+key-auth+limit-req-slow-log-on", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"debug","config":{"slow_threshold":"1s"}},`+rest+`]}`), key)
	})
}
