package trace

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// receiver is a local OTLP/HTTP trace receiver: it decodes what arrives
// (protobuf, gzip or not) and keeps the spans with their resource's
// service.name.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string
	headers []http.Header
	posts   int
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("content-type") != "application/x-protobuf" {
			http.Error(w, "unexpected "+req.URL.Path+" "+req.Header.Get("content-type"), 400)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("content-encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		raw, _ := io.ReadAll(body)
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &msg); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		r.mu.Lock()
		r.posts++
		r.headers = append(r.headers, req.Header.Clone())
		for _, rs := range msg.ResourceSpans {
			svc := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					svc = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, s)
					r.service = append(r.service, svc)
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("content-type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) url() string { return r.srv.URL + "/v1/traces" }

func (r *receiver) got() ([]*tracepb.Span, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...), append([]string(nil), r.service...)
}

// waitSpans waits until n spans arrived.
func (r *receiver) waitSpans(t testing.TB, n int) []*tracepb.Span {
	t.Helper()
	var s []*tracepb.Span
	if !tb.Poll(10*time.Second, func() bool { s, _ = r.got(); return len(s) >= n }) {
		t.Fatalf("%d spans arrived, want %d", len(s), n)
	}
	return s
}

func hexID(b []byte) string { return hex.EncodeToString(b) }

// attrs flattens a span's attributes: strings and ints.
func attrs(s *tracepb.Span) map[string]any {
	m := map[string]any{}
	for _, a := range s.Attributes {
		switch v := a.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[a.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[a.Key] = v.IntValue
		default:
			m[a.Key] = a.GetValue().String()
		}
	}
	return m
}
