package debug

import (
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestTheDebugHeaderNeedsTheSecret(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		headers      []string
		traced       bool
		tracing      bool // TraceCalls was called
		metric       string
	}{
		{"right secret", `{"secret": "` + testSecret + `"}`, []string{"x-moe-debug", testSecret}, true, true, "traced"},
		{"wrong secret", `{"secret": "` + testSecret + `"}`, []string{"x-moe-debug", "s3cret-debug-token-0124"}, false, false, "bad_secret"},
		{"a prefix of the secret", `{"secret": "` + testSecret + `"}`, []string{"x-moe-debug", testSecret[:10]}, false, false, "bad_secret"},
		{"empty value", `{"secret": "` + testSecret + `"}`, []string{"x-moe-debug", ""}, false, false, "bad_secret"},
		{"twice", `{"secret": "` + testSecret + `"}`, []string{"x-moe-debug", testSecret, "x-moe-debug", testSecret}, false, false, "bad_secret"},
		{"no header", `{"secret": "` + testSecret + `"}`, nil, false, false, ""},
		{"configured header name", `{"secret": "` + testSecret + `", "header": "X-Trace-Me"}`, []string{"x-trace-me", testSecret}, true, true, "traced"},
		{"slow log only: every request traced", `{"slow_threshold": "1s"}`, []string{"x-moe-debug", testSecret}, false, true, ""},
		{"slow log and a wrong secret: traced for the log only", `{"secret": "` + testSecret + `", "slow_threshold": "1s"}`, []string{"x-moe-debug", "nope-nope-nope-nope"}, false, true, "bad_secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, tc.config)
			req := fakeframework.NewRequest("GET", "/", tc.headers...)
			f := &filter{Config: c}
			ctx, st := fakeframework.Run(Name, f, req, nil)
			if st != api.Continue || ctx.Replied != nil {
				t.Fatalf("status %v reply %+v", st, ctx.Replied)
			}
			traced := f.traced.Load()
			if traced != tc.traced || ctx.Tracing != tc.tracing {
				t.Fatalf("traced %v tracing %v, want %v %v", traced, ctx.Tracing, tc.traced, tc.tracing)
			}
			if c.enabled {
				if _, ok := req.Get(c.header); ok {
					t.Errorf("the debug header goes upstream")
				}
			}
			for _, m := range []string{"traced", "bad_secret"} {
				want := uint64(0)
				if m == tc.metric {
					want = 1
				}
				if env.Count(m) != want {
					t.Errorf("%s = %d, want %d", m, env.Count(m), want)
				}
			}
			// Append writes the header only for a traced request.
			resp := fakeframework.NewResponse(200)
			ctx.WithResponse(resp)
			f.Append(ctx, resp, nil, nil)
			if _, ok := resp.Get(c.responseHeader); ok != tc.traced {
				t.Errorf("response header present %v, want %v", ok, tc.traced)
			}
		})
	}
}

func TestTraceFormat(t *testing.T) {
	us := time.Microsecond
	calls := []api.PluginCall{
		{Plugin: "key-auth", Hook: "OnReceive", Duration: 12 * us},
		{Plugin: "limit-req", Hook: "OnReceive", Duration: 31 * us},
		{Plugin: "transform", Hook: "OnReceiveData", Duration: 100 * us},
		{Plugin: "transform", Hook: "OnReceiveData", Duration: 150 * us},
		{Plugin: "limit-req", Hook: "Append", Duration: 9 * us},
		{Plugin: "debug", Hook: "Append", Duration: 5 * us}, // itself: left out
	}
	decisions := []api.Decision{
		{Plugin: "ip-restriction", Allowed: true, Reason: "allow-listed"}, // decided, no traced call
		{Plugin: "key-auth", Allowed: true, Reason: "consumer alice"},
		{Plugin: "limit-req", Allowed: false, Reason: `Too "Many"` + "\r\nx: y", Status: 429},
	}
	got := formatTrace("debug", calls, decisions)
	want := `moe;dur=0.302, key-auth;dur=0.012;recv=0.012;decision=allow;desc="consumer alice", ` +
		`limit-req;dur=0.040;recv=0.031;send=0.009;decision=deny;status=429;desc="Too \"Many\"??x: y", ` +
		`transform;dur=0.250;recv_data=0.250, ip-restriction;dur=0.000;decision=allow;desc="allow-listed"`
	if got != want {
		t.Fatalf("trace\n got %s\nwant %s", got, want)
	}
	if got := formatTrace("debug", nil, nil); got != "moe;dur=0.000" {
		t.Fatalf("empty trace %q", got)
	}
}

func TestLogLineIsSafe(t *testing.T) {
	if got := safe(withoutQuery("/login?api_key=SECRET"), 256); got != "/login" {
		t.Errorf("query kept: %q", got)
	}
	if got := safe("/a\nfake log line", 256); got != "/a?fake log line" {
		t.Errorf("newline kept: %q", got)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "secret", "is required unless slow_threshold is set"},
		{`{"secret": "short"}`, "secret", "must be 16 to 1024 bytes long, got 5 bytes"},
		{`{"secret": "has a space in it ok"}`, "secret", "printable ASCII without spaces"},
		{`{"secret": "` + testSecret + `", "header": "x debug"}`, "header", "not a valid header name"},
		{`{"secret": "` + testSecret + `", "response_header": ""}`, "response_header", "not a valid header name"},
		{`{"slow_threshold": "-1s"}`, "slow_threshold", "between 0s and 1h0m0s"},
		{`{"slow_threshold": "soon"}`, "slow_threshold", "invalid duration"},
		{`{"secrt": "x"}`, "secrt", "unknown field"},
	} {
		t.Run(tc.field+" "+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}

// The error of a bad secret never shows it.
func TestConfigErrorsDoNotShowTheSecret(t *testing.T) {
	const s = "has a space in it ok"
	_, _, err := fakeframework.Parse[*Config](t, Name, newConfig, `{"secret": "`+s+`"}`, false)
	if err == nil || strings.Contains(err.Error(), s) {
		t.Fatalf("error %v", err)
	}
}
