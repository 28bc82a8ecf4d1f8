package conformance

import (
	"strings"
	"testing"
	"time"
)

// TestAccessLogDownstreamStart: with access_log_options.flush_access_log_on_new_request the golang
// filter's OnLogDownstreamStart runs (before DecodeHeaders) with the request headers, and OnLog
// still runs at the end (Envoy AccessLogDownstreamStart).
func TestAccessLogDownstreamStart(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	// The events are queried through this host's own conf filter: give the query listener the
	// name the helpers use.
	h := startHost(t, hostSpec{tmpl: "logstart", listeners: []string{"main"}, data: map[string]any{"A1": a1.Port}})
	for i, ref := range []string{"r", "r2"} {
		id := "logstart-" + ref
		r := h.must(t, req{listener: "main", method: "POST", path: "/test", body: "x", headers: hdrs("x-test-id", id, "referer", ref)})
		if r.status != 200 {
			t.Fatalf("request %d: %d", i, r.status)
		}
		ev := h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "destroy") })
		s, dh, l := eventIndex(ev, "log-start path=/test"), eventIndex(ev, "decode-header"), eventIndex(ev, "log path=/test")
		if s < 0 || dh < 0 || l < 0 || !(s < dh && dh < l) || countEvents(ev, "log-start") != 1 {
			t.Errorf("want log-start, then decode-header, then log; events:\n%s", strings.Join(ev, "\n"))
		}
	}
}

// TestAccessLogDownstreamPeriodic: with access_log_options.access_log_flush_interval the golang
// filter's OnLogDownstreamPeriodic runs at that interval while the stream lives (Envoy
// AccessLogDownstreamPeriodic), between DecodeHeaders and the final OnLog, and never after it.
func TestAccessLogDownstreamPeriodic(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	h := startHost(t, hostSpec{tmpl: "logstart", listeners: []string{"main"}, data: map[string]any{"A1": a1.Port}})
	id := "logperiodic-1"
	// The upstream holds the response for 450 ms: at a 100 ms interval that is ~4 periodic logs.
	r := h.must(t, req{listener: "main", method: "GET", path: "/delay/450", headers: hdrs("x-test-id", id)})
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	ev := h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "destroy") })
	n := countEvents(ev, "log-periodic")
	dh, l := eventIndex(ev, "decode-header"), eventIndex(ev, "log path=")
	first := eventIndex(ev, "log-periodic")
	if n < 2 || n > 8 || dh < 0 || l < 0 || first < dh {
		t.Fatalf("want 2..8 periodic logs after decode-header and before the final log; events:\n%s", strings.Join(ev, "\n"))
	}
	for i, e := range ev {
		if i > l && strings.HasPrefix(e, "log-periodic") {
			t.Fatalf("periodic log after the final log; events:\n%s", strings.Join(ev, "\n"))
		}
	}
}
