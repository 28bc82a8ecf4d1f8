package trace

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	_ "github.com/moeproxy/moe/plugins/auth/keyauth"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

func destroy(cfg any) { cfg.(interface{ Destroy() }).Destroy() }

func chainJSON(endpoint, extra string) string {
	return fmt.Sprintf(`{"plugins":[
		{"name":"trace","config":{"service_name":"edge","child_spans":true,"attributes":{"tenant":"$header_x-tenant"},
		 "exporter":{"endpoint":%q,"batch_timeout":"50ms","timeout":"1s"%s}}},
		{"name":"key-auth","config":{"sources":["header:x-api-key"],"consumers":[{"name":"alice","keys":["alice-key-2026-a"]}]}}]}`, endpoint, extra)
}

// Through the real framework: the span the receiver decodes carries the
// incoming trace id, the incoming parent, the span id the upstream saw in
// traceparent, the request's attributes and status, and one child span per
// plugin call after trace.
func TestChainExportsTheRequestsSpan(t *testing.T) {
	rcv := newReceiver(t)
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			before, _ := rcv.got()
			extra := ""
			if gz {
				extra = `,"compression":"gzip","headers":{"x-collector-key":"k1"}`
			}
			r, err := fakeenvoy.NewChain(chainJSON(rcv.url(), extra))
			if err != nil {
				t.Fatal(err)
			}
			res := r.Do(fakeenvoy.Request{Path: "/orders?id=1", RouteName: "orders", Cluster: "echo",
				Headers: [][2]string{{"traceparent", validTP}, {"x-api-key", "alice-key-2026-a"}, {"x-tenant", "t1"}, {"user-agent", "ua/1"}}})
			if res.Status != 200 || len(res.Violations) > 0 {
				t.Fatalf("status %d violations %v", res.Status, res.Violations)
			}
			upTP := res.Upstream.Headers["traceparent"][0]
			// A refused request: its span says so (401 is not a server error).
			res = r.Do(fakeenvoy.Request{Path: "/orders", RouteName: "orders", Headers: [][2]string{{"traceparent", validTP}}})
			if res.Status != 401 {
				t.Fatalf("refused: %d", res.Status)
			}
			// An upstream 503: status Error.
			res = r.Do(fakeenvoy.Request{Path: "/x", RouteName: "orders", Headers: [][2]string{{"x-api-key", "alice-key-2026-a"}},
				Upstream: func(*fakeenvoy.Upstream) fakeenvoy.Response { return fakeenvoy.Response{Status: 503} }})
			if res.Status != 503 {
				t.Fatalf("upstream 503: %d", res.Status)
			}
			destroy(r.Config()) // flushes
			all := rcv.waitSpans(t, len(before)+6)[len(before):]
			_, svcs := rcv.got()
			var servers, children []*tracepb.Span
			for _, s := range all {
				if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
					servers = append(servers, s)
				} else {
					children = append(children, s)
				}
			}
			if len(servers) != 3 || len(children) != 3 || svcs[len(svcs)-1] != "edge" {
				t.Fatalf("%d server spans, %d children, service %q", len(servers), len(children), svcs[len(svcs)-1])
			}
			byPath := map[string]*tracepb.Span{}
			for _, s := range servers {
				byPath[attrs(s)["url.path"].(string)+fmt.Sprint(attrs(s)["http.response.status_code"])] = s
			}
			ok := byPath["/orders200"]
			if ok == nil {
				t.Fatalf("no span for the passed request: %v", byPath)
			}
			if hexID(ok.TraceId) != validTP[3:35] || hexID(ok.ParentSpanId) != validTP[36:52] || hexID(ok.SpanId) != upTP[36:52] {
				t.Fatalf("ids: trace %x parent %x span %x; upstream saw %s", ok.TraceId, ok.ParentSpanId, ok.SpanId, upTP)
			}
			a := attrs(ok)
			if ok.Name != "GET orders" || a["http.request.method"] != "GET" || a["moe.route"] != "orders" || a["moe.consumer"] != "alice" ||
				a["tenant"] != "t1" || a["user_agent.original"] != "ua/1" || a["client.address"] != "10.0.0.1" || ok.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
				t.Fatalf("span %s %v status %v", ok.Name, a, ok.Status)
			}
			if d := time.Duration(ok.EndTimeUnixNano - ok.StartTimeUnixNano); d <= 0 || d > 5*time.Second {
				t.Fatalf("duration %v", d)
			}
			if s := byPath["/orders401"]; s == nil || s.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
				t.Fatalf("refused span %v", s)
			}
			if s := byPath["/x503"]; s == nil || s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || len(s.ParentSpanId) != 0 {
				t.Fatalf("503 span %v", s)
			}
			// Children: key-auth's OnReceive (one per request), under their server span.
			for _, c := range children {
				if c.Name != "key-auth OnReceive" || c.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
					t.Fatalf("child %s %v", c.Name, c.Kind)
				}
				found := false
				for _, s := range servers {
					if string(s.SpanId) == string(c.ParentSpanId) && string(s.TraceId) == string(c.TraceId) {
						found = c.StartTimeUnixNano >= s.StartTimeUnixNano && c.EndTimeUnixNano <= s.EndTimeUnixNano
					}
				}
				if !found {
					t.Fatalf("child %x not inside a server span", c.SpanId)
				}
			}
			if gz {
				rcv.mu.Lock()
				h := rcv.headers[len(rcv.headers)-1]
				rcv.mu.Unlock()
				if h.Get("x-collector-key") != "k1" || h.Get("content-encoding") != "gzip" {
					t.Fatalf("export headers %v", h)
				}
			}
		})
	}
}

// A collector that is down costs requests nothing: the export fails on the
// exporter's goroutine and is counted.
func TestChainCollectorDown(t *testing.T) {
	logMark := fakeenvoy.MarkLogs()
	down := fmt.Sprintf("http://127.0.0.1:%d/v1/traces", hosttest.ClosedPort(t))
	r, err := fakeenvoy.NewChain(chainJSON(down, ""))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := 0; i < 200; i++ {
		if res := r.Do(fakeenvoy.Request{Headers: [][2]string{{"x-api-key", "alice-key-2026-a"}}}); res.Status != 200 {
			t.Fatalf("status %d", res.Status)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("200 requests took %v", d)
	}
	destroy(r.Config())
	if n := fakeenvoy.LogsSince(logMark, "exporting"); len(n) == 0 || !strings.Contains(n[0], "failed") {
		t.Logf("logs: %v", n)
	}
}

// BenchmarkChain: a whole request through the moe filter manager on the fake
// Envoy, against the empty chain measured in the same run.
func BenchmarkChain(b *testing.B) {
	rcv := newReceiver(b)
	// Envoy sets x-request-id before the filters run (generate_request_id).
	tp, rid := [2]string{"traceparent", validTP}, [2]string{"x-request-id", "0b6c2f4e-9d1a-4c1e-8a57-3f0e5d7c9b21"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), tp, rid)
	})
	for _, tc := range []struct{ name, config string }{
		{"trace-propagation-only", `{}`},
		{"trace-not-sampled-with-exporter", fmt.Sprintf(`{"sampling":{"ratio":0},"exporter":{"endpoint":%q}}`, rcv.url())},
		{"trace-sampled-exported", fmt.Sprintf(`{"exporter":{"endpoint":%q,"queue_size":65536,"batch_size":4096}}`, rcv.url())},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"trace","config":`+tc.config+`}]}`)
			b.Cleanup(func() { destroy(cfg) })
			header := tp
			if strings.Contains(tc.name, "not-sampled") {
				header = [2]string{"traceparent", unsampledTP}
			}
			fakeenvoy.BenchChain(b, cfg, header, rid)
		})
	}
}
