package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// otlpReceiver is the loopback OTLP/HTTP trace receiver of B6: it decodes each export and
// counts the spans, so the report can show that the gateway chain really exported them.
type otlpReceiver struct {
	URL     string // http://127.0.0.1:<port>/v1/traces
	exports atomic.Int64
	spans   atomic.Int64
	bad     atomic.Int64
}

func startOTLP(t tb.TB) *otlpReceiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("OTLP receiver: %v", err)
	}
	r := &otlpReceiver{URL: fmt.Sprintf("http://%s/v1/traces", l.Addr())}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 64<<20))
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &msg)
	}
	if err != nil || req.URL.Path != "/v1/traces" {
		r.bad.Add(1)
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	n := 0
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	r.exports.Add(1)
	r.spans.Add(int64(n))
	w.Header().Set("content-type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse is zero bytes
}
