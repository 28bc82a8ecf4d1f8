package mirror

import (
	"net"
	"strconv"
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// Through the real framework over a fake Envoy: a streamed body reaches the
// upstream untouched and whole, and its copy reaches the target.
func TestChainStreamsTheBodyAndCopiesIt(t *testing.T) {
	rec := newRecorder(t)
	r, err := fakeenvoy.NewPlugin(Name, `{"targets": [{"name": "t", "url": "`+rec.srv.URL+`"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Do(fakeenvoy.Request{Method: "POST", Path: "/up", Body: []string{"part one, ", "part two"}})
	if res.Status != 200 || res.Upstream == nil || res.Upstream.Body != "part one, part two" || len(res.Violations) > 0 {
		t.Fatalf("status %d upstream %+v violations %v", res.Status, res.Upstream, res.Violations)
	}
	if got := rec.wait(t, 1)[0]; got.body != "part one, part two" || got.uri != "/up" {
		t.Fatalf("copy %+v", got)
	}
}

// stalled is a target that accepts and never answers (the benchmark's copies
// are dropped, so only the request path is measured).
func stalled(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return "http://127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// BenchmarkChain: a headers-only request through the moe filter manager on
// the fake Envoy, against the empty chain in the same run. "not-selected":
// the target's match misses (the cost every request pays); "selected": the
// request is copied (header snapshot, queue offer; the queue is full, so no
// background traffic disturbs the measurement).
func BenchmarkChain(b *testing.B) {
	hdr := [2]string{"x-user", "alice"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), hdr)
	})
	url := stalled(b)
	b.Run("mirror-not-selected", func(b *testing.B) {
		cfg := fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"mirror","config":{"targets":[{"name":"b","url":"`+url+`","match":{"path":{"prefix":"/api/"}}}]}}]}`)
		fakeenvoy.BenchChain(b, cfg, hdr)
	})
	b.Run("mirror-selected", func(b *testing.B) {
		cfg := fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"mirror","config":{"workers":1,"queue_size":0,"timeout":"1m","targets":[{"name":"b","url":"`+url+`"}]}}]}`)
		fakeenvoy.BenchChain(b, cfg, hdr)
	})
}
