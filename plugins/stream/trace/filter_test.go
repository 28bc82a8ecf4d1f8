package trace

import (
	"regexp"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

const (
	validTP     = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	unsampledTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
)

var tpRE = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$`)

func TestParseTraceparent(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{validTP, true},
		{unsampledTP, true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future-part", true}, // higher version: extra fields allowed
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", false},      // version 00: exact length
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", false},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false}, // upper case
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false}, // zero trace id
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false}, // zero parent id
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01", false},
		{"garbage", false},
		{"", false},
	} {
		if _, ok := parseTraceparent(tc.v); ok != tc.ok {
			t.Errorf("parseTraceparent(%q) = %v, want %v", tc.v, ok, tc.ok)
		}
	}
}

func receive(t *testing.T, c *Config, kv ...string) (*fakeframework.Context, *filter) {
	t.Helper()
	ctx := fakeframework.NewContext(Name, fakeframework.NewRequest("GET", "/a", kv...))
	f := &filter{c: c}
	if st := f.OnReceive(ctx, ctx.Req, nil, nil); st != api.Continue {
		t.Fatalf("status %v", st)
	}
	return ctx, f
}

func header(ctx *fakeframework.Context, k string) string { v, _ := ctx.Req.Get(k); return v }

func TestPropagation(t *testing.T) {
	c, env := parse(t, `{}`)

	// A valid traceparent is continued: same trace, the gateway's span as the
	// new parent, tracestate kept.
	ctx, f := receive(t, c, "traceparent", validTP, "tracestate", "vendor=abc,other=1")
	tp := header(ctx, "traceparent")
	if !tpRE.MatchString(tp) || tp[3:35] != validTP[3:35] || tp[36:52] == validTP[36:52] || tp[53:] != "01" {
		t.Fatalf("continued: %q", tp)
	}
	if header(ctx, "tracestate") != "vendor=abc,other=1" || !f.sampled || f.parent.isZero() {
		t.Fatalf("continued: tracestate %q sampled %v", header(ctx, "tracestate"), f.sampled)
	}
	if v, _ := ctx.Var("$trace_id"); v != validTP[3:35] {
		t.Fatalf("$trace_id = %q", v)
	}
	if v, _ := ctx.Var("$span_id"); v != tp[36:52] {
		t.Fatalf("$span_id = %q", v)
	}

	// Missing: a new trace starts.
	ctx, f = receive(t, c)
	if tp := header(ctx, "traceparent"); !tpRE.MatchString(tp) || tp[3:35] == validTP[3:35] || !f.parent.isZero() {
		t.Fatalf("started: %q", tp)
	}

	// Malformed: replaced by a new trace, its tracestate dropped.
	ctx, _ = receive(t, c, "traceparent", "00-zz", "tracestate", "vendor=abc")
	if tp := header(ctx, "traceparent"); !tpRE.MatchString(tp) {
		t.Fatalf("replaced: %q", tp)
	}
	if _, ok := ctx.Req.Get("tracestate"); ok {
		t.Fatal("tracestate of a replaced traceparent kept")
	}
	// Two traceparent headers are invalid too.
	ctx, _ = receive(t, c, "traceparent", validTP, "traceparent", validTP)
	if tp := header(ctx, "traceparent"); tp[3:35] == validTP[3:35] {
		t.Fatalf("two headers continued: %q", tp)
	}
	// An invalid tracestate is dropped, the trace continued.
	ctx, _ = receive(t, c, "traceparent", validTP, "tracestate", "novalue")
	if _, ok := ctx.Req.Get("tracestate"); ok || header(ctx, "traceparent")[3:35] != validTP[3:35] {
		t.Fatal("invalid tracestate kept")
	}
	if env.Count("traces_continued") != 2 || env.Count("traces_started") != 1 || env.Count("traceparent_invalid") != 2 {
		t.Fatalf("metrics %v", env.Values())
	}
}

func TestSampling(t *testing.T) {
	for _, tc := range []struct {
		name, config, tp string
		sampled          bool
	}{
		{"parent sampled, ratio 0", `{"sampling": {"ratio": 0}}`, validTP, true},
		{"parent not sampled, ratio 1", `{"sampling": {"ratio": 1}}`, unsampledTP, false},
		{"no parent, ratio 0", `{"sampling": {"ratio": 0}}`, "", false},
		{"no parent, ratio 1", `{"sampling": {"ratio": 1}}`, "", true},
		{"parent ignored, ratio 1", `{"sampling": {"ratio": 1, "parent_based": false}}`, unsampledTP, true},
		{"parent ignored, ratio 0", `{"sampling": {"ratio": 0, "parent_based": false}}`, validTP, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := parse(t, tc.config)
			var kv []string
			if tc.tp != "" {
				kv = []string{"traceparent", tc.tp}
			}
			ctx, f := receive(t, c, kv...)
			flag := header(ctx, "traceparent")[53:]
			if f.sampled != tc.sampled || (flag == "01") != tc.sampled {
				t.Fatalf("sampled %v flag %s, want %v", f.sampled, flag, tc.sampled)
			}
		})
	}
	// A ratio samples about that share of new traces, deterministically by trace id.
	c, _ := parse(t, `{"sampling": {"ratio": 0.25}}`)
	n := 0
	for i := 0; i < 4000; i++ {
		tid := newTraceID()
		if sampledByRatio(tid, c.bound) {
			n++
		}
		if sampledByRatio(tid, c.bound) != sampledByRatio(tid, c.bound) {
			t.Fatal("not deterministic")
		}
	}
	if n < 800 || n > 1200 {
		t.Fatalf("ratio 0.25 sampled %d of 4000", n)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestRequestID(t *testing.T) {
	c, env := parse(t, `{}`)
	ctx, f := receive(t, c, "x-request-id", "given-1")
	if header(ctx, "x-request-id") != "given-1" || f.requestID != "given-1" {
		t.Fatalf("kept: %q", f.requestID)
	}
	ctx, f = receive(t, c)
	if id := header(ctx, "x-request-id"); !uuidRE.MatchString(id) || env.Count("request_ids_generated") != 1 {
		t.Fatalf("generated %q", id)
	}
	resp := fakeframework.NewResponse(200)
	f.Append(ctx.WithResponse(resp), resp, nil, nil)
	if v, _ := resp.Get("x-request-id"); v != f.requestID {
		t.Fatalf("response id %q", v)
	}

	c, _ = parse(t, `{"request_id": {"header": "X-Trace-Req", "generate": false, "include_in_response": false}}`)
	ctx, f = receive(t, c)
	if _, ok := ctx.Req.Get("x-trace-req"); ok || f.requestID != "" {
		t.Fatal("generated although generate is false")
	}
	ctx, f = receive(t, c, "x-trace-req", "r2")
	resp = fakeframework.NewResponse(200)
	f.Append(ctx.WithResponse(resp), resp, nil, nil)
	if _, ok := resp.Get("x-trace-req"); ok || f.requestID != "r2" {
		t.Fatal("included in response although off")
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{"service_name": ""}`, "service_name", "must not be empty"},
		{`{"sampling": {"ratio": 1.5}}`, "sampling.ratio", "between 0 and 1"},
		{`{"sampling": {"ratio": -0.1}}`, "sampling.ratio", "between 0 and 1"},
		{`{"request_id": {"header": "bad header"}}`, "request_id.header", "not a valid header name"},
		{`{"request_id": {"header": "traceparent"}}`, "request_id.header", "trace context header"},
		{`{"exporter": {"endpoint": "127.0.0.1:4318"}}`, "exporter.endpoint", "http:// or https://"},
		{`{"exporter": {"endpoint": "http://:4318/v1/traces"}}`, "exporter.endpoint", "with a host"},
		{`{"exporter": {"endpoint": "http://127.0.0.1:99999/v1/traces"}}`, "exporter.endpoint", "with a host"},
		{`{"exporter": {"endpoint": "http://127.0.0.1:0/v1/traces"}}`, "exporter.endpoint", "with a host"},
		{`{"exporter": {"endpoint": "http://127.0.0.1:4318/v1/traces", "compression": "zstd"}}`, "exporter.compression", "must be one of"},
		{`{"exporter": {"endpoint": "http://127.0.0.1:4318/v1/traces", "timeout": "0s"}}`, "exporter.timeout", "greater than 0"},
		{`{"exporter": {"endpoint": "http://127.0.0.1:4318/v1/traces", "batch_size": 0}}`, "exporter.batch_size", "between 1 and"},
		{`{"exporter": {"endpoint": "http://127.0.0.1:4318/v1/traces", "batch_size": 100, "queue_size": 10}}`, "exporter.batch_size", "must not exceed"},
		{`{"exporter": {"endpoint": "http://127.0.0.1:4318/v1/traces", "headers": {"a b": "x"}}}`, "exporter.headers.a b", "not a valid header name"},
		{`{"attributes": {"x": "$nope"}}`, "attributes.x", "unknown variable"},
		{`{"span_name": "$nope"}`, "span_name", "unknown variable"},
		{`{"samplig": {}}`, "samplig", "unknown field"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
			fakeframework.WantCheckError(t, Name, tc.config, tc.field, tc.reason) // moectl validate
		})
	}
}

func TestFormatAndIDs(t *testing.T) {
	if got := formatTraceparent(traceID{1}, spanID{2}, 1); got != "00-01000000000000000000000000000000-0200000000000000-01" {
		t.Fatal(got)
	}
	if id := newRequestID(); !uuidRE.MatchString(id) {
		t.Fatal(id)
	}
	if !validTracestate("a=1, b=2") || validTracestate("a") || validTracestate(strings.Repeat("a=1,", 33)) {
		t.Fatal("tracestate checks")
	}
}
