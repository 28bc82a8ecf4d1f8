package trace

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// The documented example through moe-host, with a local OTLP receiver in
// place of the collector: the upstream sees the continued trace, the
// receiver decodes the gateway's span (parent = the client's span, id = the
// upstream's parent) and a child span for access-log... which has no
// request-path hook, so none; the access log line carries $trace_id and
// $span_id.
func TestE2EExample(t *testing.T) {
	rcv := newReceiver(t)
	h := hosttest.StartExample(t, "envoy/examples/trace.yaml", hosttest.ExampleOptions{Replace: map[string]string{
		"http://127.0.0.1:4318/v1/traces": rcv.url(),
	}})

	resp, _ := hosttest.Get(t, h.URL+"/orders", "traceparent", validTP, "tracestate", "vendor=1")
	up := hosttest.DecodeEcho(t, resp)
	upTP := up.Header("traceparent")
	if resp.StatusCode != 200 || !tpRE.MatchString(upTP) || upTP[3:35] != validTP[3:35] || upTP[36:52] == validTP[36:52] || up.Header("tracestate") != "vendor=1" {
		t.Fatalf("continued: %d, upstream traceparent %q tracestate %q", resp.StatusCode, upTP, up.Header("tracestate"))
	}
	rid := resp.Header.Get("x-request-id")
	if rid == "" || up.Header("x-request-id") != rid {
		t.Fatalf("request id: response %q, upstream %q", rid, up.Header("x-request-id"))
	}

	resp, _ = hosttest.Get(t, h.URL+"/new")
	if tp := hosttest.DecodeEcho(t, resp).Header("traceparent"); !tpRE.MatchString(tp) || tp[3:35] == validTP[3:35] {
		t.Fatalf("started: %q", tp)
	}
	resp, _ = hosttest.Get(t, h.URL+"/bad", "traceparent", "garbage", "tracestate", "old=1")
	up = hosttest.DecodeEcho(t, resp)
	if tp := up.Header("traceparent"); !tpRE.MatchString(tp) || up.Header("tracestate") != "" {
		t.Fatalf("replaced: %q, tracestate %q", tp, up.Header("tracestate"))
	}
	resp, _ = hosttest.Get(t, h.URL+"/status/503")
	if resp.StatusCode != 503 {
		t.Fatalf("503: %d", resp.StatusCode)
	}

	spans := rcv.waitSpans(t, 4)
	byPath := map[string]*tracepb.Span{}
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			byPath[attrs(s)["url.path"].(string)] = s
		}
	}
	s := byPath["/orders"]
	if s == nil {
		t.Fatalf("no span for /orders: %v", byPath)
	}
	a := attrs(s)
	if hexID(s.TraceId) != validTP[3:35] || hexID(s.ParentSpanId) != validTP[36:52] || hexID(s.SpanId) != upTP[36:52] || s.TraceState != "vendor=1" {
		t.Fatalf("ids: trace %x parent %x span %x state %q, upstream %s", s.TraceId, s.ParentSpanId, s.SpanId, s.TraceState, upTP)
	}
	if s.Name != "GET orders" || a["http.response.status_code"] != int64(200) || a["moe.request_id"] != rid || a["moe.route"] != "orders" ||
		a["moe.cluster"] != "upstream" || a["moe.response_code_details"] != "via_upstream" || a["client.address"] != "127.0.0.1" {
		t.Fatalf("span %s %v", s.Name, a)
	}
	if s := byPath["/status/503"]; s == nil || s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Fatalf("503 span %v", s)
	}
	_, svcs := rcv.got()
	if svcs[0] != "moe-demo" {
		t.Fatalf("service.name %q", svcs[0])
	}
	// The access-log line of the first request names its trace and span.
	want := fmt.Sprintf("%s %s %s 200 GET /orders", validTP[3:35], upTP[36:52], rid)
	if !tb.Poll(5*time.Second, func() bool { return strings.Contains(h.Output(), want) }) {
		t.Fatalf("no access-log line %q in the output", want)
	}
	if got := h.Counter(t, "moe_trace_traces_continued"); got != 1 {
		t.Fatalf("traces_continued = %d", got)
	}
	if got := h.Counter(t, "moe_trace_traceparent_invalid"); got != 1 {
		t.Fatalf("traceparent_invalid = %d", got)
	}
}

// With the collector down requests are as quick as ever and the lost spans
// are counted; a graceful stop does not hang on the exporter.
func TestE2ECollectorDown(t *testing.T) {
	down := fmt.Sprintf("http://127.0.0.1:%d/v1/traces", hosttest.ClosedPort(t))
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: []hosttest.Plugin{{Name: Name, Config: map[string]any{
		"exporter": map[string]any{"endpoint": down, "timeout": "500ms", "batch_timeout": "50ms"},
	}}}})
	c := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	for i := 0; i < 50; i++ {
		if code, _, _ := hosttest.Fetch(t, c, h.URL+"/x"); code != 200 {
			t.Fatalf("status %d", code)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("50 requests took %v with the collector down", d)
	}
	if !tb.Poll(5*time.Second, func() bool { return h.Counter(t, "moe_trace_spans_failed") == 50 }) {
		t.Fatalf("spans_failed = %d, want 50", h.Counter(t, "moe_trace_spans_failed"))
	}
	h.Signal(syscall.SIGTERM)
	if err := h.WaitExit(t, 10*time.Second); err != nil {
		t.Logf("exit: %v", err)
	}
}
