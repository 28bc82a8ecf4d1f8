package conformance

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// uuid4Pattern is a version 4, RFC 4122 variant UUID as Envoy writes it
// (lower-case hex).
var uuid4Pattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// testHeaderMap checks CopyHeaders/CopyTrailers fidelity: many headers, repeated keys (order
// kept), empty values, long values, pseudo-headers (golang_filter.cc copyHeaders; the header_num /
// header_bytes given to Go must describe exactly what is copied).
func testHeaderMap(t *testing.T, e *env) {
	h := e.h
	var sent [][2]string
	var raw strings.Builder
	raw.WriteString("POST /dump/path?q=1 HTTP/1.1\r\nhost: test.com\r\nx-test-dump-headers: 1\r\ncontent-length: 0\r\n")
	add := func(k, v string) {
		sent = append(sent, [2]string{k, v})
		fmt.Fprintf(&raw, "%s: %s\r\n", k, v)
	}
	for i := 0; i < 70; i++ {
		add(fmt.Sprintf("x-h-%02d", i), strings.Repeat(string(rune('a'+i%26)), 10+i*3))
	}
	add("x-multi", "first")
	add("x-multi", "second")
	add("x-multi", "third")
	add("x-empty", "")
	add("X-Mixed-Case", "Value With Spaces")
	raw.WriteString("\r\n")
	rc := h.dial(t, "main")
	rc.write(raw.String())
	res, body, err := rc.readResponse("POST")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("dump: %v %v", err, res)
	}
	var got map[string][]string
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("dump body %q: %v", body, err)
	}
	want := map[string][]string{}
	for _, kv := range sent {
		k := strings.ToLower(kv[0])
		want[k] = append(want[k], kv[1])
	}
	for k, v := range want {
		if strings.Join(got[k], "\x00") != strings.Join(v, "\x00") || len(got[k]) != len(v) {
			t.Errorf("Go saw %s=%q, want %q", k, got[k], v)
		}
	}
	for k, v := range map[string]string{":method": "POST", ":path": "/dump/path?q=1", ":authority": "test.com", ":scheme": "http"} {
		if len(got[k]) != 1 || got[k][0] != v {
			t.Errorf("pseudo-header %s = %q, want [%q]", k, got[k], v)
		}
	}
	if _, ok := got["host"]; ok {
		t.Errorf("Go saw a host header; Envoy turns it into :authority")
	}
	// the connection manager's request header mutations happen before the filters
	// (connection_manager_utility.cc mutateRequestHeaders)
	if len(got["x-forwarded-proto"]) != 1 || got["x-forwarded-proto"][0] != "http" {
		t.Errorf("x-forwarded-proto = %q, want [http]", got["x-forwarded-proto"])
	}
	if len(got["x-request-id"]) != 1 || !uuid4Pattern.MatchString(got["x-request-id"][0]) {
		t.Errorf("x-request-id = %q, want one generated version 4 UUID", got["x-request-id"])
	}
	rc.write(raw.String()) // the same request again: a new id
	if res, body, err := rc.readResponse("POST"); err != nil || res.StatusCode != 200 {
		t.Errorf("second dump: %v %v", err, res)
	} else if again := map[string][]string{}; json.Unmarshal([]byte(body), &again) != nil || len(again["x-request-id"]) != 1 ||
		!uuid4Pattern.MatchString(again["x-request-id"][0]) || again["x-request-id"][0] == got["x-request-id"][0] {
		t.Errorf("second request's x-request-id = %q, want a version 4 UUID other than %q", again["x-request-id"], got["x-request-id"])
	}

	t.Run("Trailers", func(t *testing.T) {
		rc := h.dial(t, "main")
		var b strings.Builder
		b.WriteString("POST /echo HTTP/1.1\r\nhost: test.com\r\nx-test-dump-trailers: 1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n")
		var tsent [][2]string
		for i := 0; i < 40; i++ {
			k, v := fmt.Sprintf("x-t-%02d", i), strings.Repeat("v", i)
			tsent = append(tsent, [2]string{k, v})
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
		b.WriteString("x-t-multi: 1\r\nx-t-multi: 2\r\n\r\n")
		rc.write(b.String())
		res, body, err := rc.readResponse("POST")
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("dump trailers: %v %v", err, res)
		}
		var got map[string][]string
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("dump body %q: %v", body, err)
		}
		for _, kv := range tsent {
			if len(got[kv[0]]) != 1 || got[kv[0]][0] != kv[1] {
				t.Errorf("trailer %s = %q, want [%q]", kv[0], got[kv[0]], kv[1])
			}
		}
		if strings.Join(got["x-t-multi"], ",") != "1,2" {
			t.Errorf("x-t-multi = %q, want [1 2]", got["x-t-multi"])
		}
	})
}

func sum(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }

// testLargeBodies streams multi-MiB bodies both ways through Go (sync and async, streaming and
// buffered), checking every byte, and the default 1 MiB buffer limit.
func testLargeBodies(t *testing.T, e *env) {
	h := e.h
	const big = 6 << 20
	body := pattern(big)
	upper := bytes.ToUpper(body)
	for _, mode := range modes() {
		t.Run("RequestStreamingUpper_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: string(body), headers: hdrs("x-test-mode", mode, "x-test-dd-mode", "upper")})
			rep := decodeEcho(t, r)
			if len(rep.Body) != big || sum([]byte(rep.Body)) != sum(upper) {
				t.Errorf("upstream got %d bytes (hash match %v), want %d upper-cased", len(rep.Body), sum([]byte(rep.Body)) == sum(upper), big)
			}
		})
		t.Run("RequestWatermark_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: string(body), headers: hdrs("x-test-mode", mode, "x-test-dd-mode", "watermark")})
			rep := decodeEcho(t, r)
			if len(rep.Body) != big || sum([]byte(rep.Body)) != sum(upper) {
				t.Errorf("upstream got %d bytes, want %d upper-cased (StopAndBufferWatermark holds, then forwards everything)", len(rep.Body), big)
			}
		})
		t.Run("ResponseWatermark_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", path: fmt.Sprintf("/bytes/%d", big), headers: hdrs("x-test-mode", mode, "x-test-ed-mode", "watermark")})
			if r.status != 200 || len(r.body) != big || sum([]byte(r.body)) != sum(upper) {
				t.Errorf("got %d with %d bytes, want 200 with %d upper-cased bytes (StopAndBufferWatermark holds, then forwards everything)", r.status, len(r.body), big)
			}
		})
		t.Run("ResponseStreamingUpper_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", path: fmt.Sprintf("/bytes/%d", big), headers: hdrs("x-test-mode", mode, "x-test-ed-mode", "upper")})
			if r.status != 200 || len(r.body) != big || sum([]byte(r.body)) != sum(upper) {
				t.Errorf("got %d with %d bytes, want 200 with %d upper-cased bytes", r.status, len(r.body), big)
			}
		})
		t.Run("BufferedUnderLimit_"+mode, func(t *testing.T) {
			n := 900 << 10
			r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: string(body[:n]), headers: hdrs("x-test-mode", mode, "x-test-dh-ret", "StopAndBuffer", "x-test-dd-mode", "upper")})
			rep := decodeEcho(t, r)
			if r.status != 200 || rep.Body != string(upper[:n]) {
				t.Errorf("got %d, %d bytes, want 200 with %d upper-cased bytes", r.status, len(rep.Body), n)
			}
		})
		t.Run("BufferedOverDefaultLimit_413_"+mode, func(t *testing.T) {
			noKeepAlive := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			r := h.doWith(t, noKeepAlive, req{listener: "main", method: "POST", path: "/echo", body: string(body[:3<<20]), headers: hdrs("x-test-mode", mode, "x-test-dh-ret", "StopAndBuffer")})
			if r.err != nil {
				// the host may close the connection while the client still writes the body
				t.Logf("transport: %v", r.err)
				return
			}
			if r.status != 413 {
				t.Errorf("got %d, want 413 (default per_connection_buffer_limit_bytes 1 MiB)", r.status)
			}
		})
	}
	// A response sent before the request was fully read closes an HTTP/1.1 connection, with
	// "connection: close" (conn_manager_impl.cc ActiveStream::encodeHeaders: !remoteDecodeComplete
	// -> drain_state_ = Closing -> Connection: close).
	t.Run("ResponseBeforeRequestComplete_ConnectionClose", func(t *testing.T) {
		rc := h.dial(t, "main")
		rc.write(fmt.Sprintf("POST /echo HTTP/1.1\r\nhost: test.com\r\ncontent-length: %d\r\nx-test-dh-ret: StopAndBuffer\r\n\r\n", 3<<20))
		rc.write(string(body[:2<<20]))
		res, _, err := rc.readResponse("POST")
		if err != nil {
			t.Fatalf("response: %v", err)
		}
		if res.StatusCode != 413 || !res.Close {
			t.Errorf("got %d close=%v, want 413 with connection: close", res.StatusCode, res.Close)
		}
		if !rc.closedByPeer(5 * time.Second) {
			t.Errorf("connection still open after a response to an incomplete request")
		}
	})
	t.Run("LocalReplyBeforeRequestComplete_ConnectionClose", func(t *testing.T) {
		rc := h.dial(t, "main")
		rc.write("POST /echo HTTP/1.1\r\nhost: test.com\r\ncontent-length: 100\r\nx-test-localreply: decode-header\r\n\r\n")
		res, _, err := rc.readResponse("POST")
		if err != nil {
			t.Fatalf("response: %v", err)
		}
		if res.StatusCode != 403 || !res.Close {
			t.Errorf("got %d close=%v, want 403 with connection: close (request body still pending)", res.StatusCode, res.Close)
		}
	})
	// Go slow on every chunk (async, 10 ms each): data piles up in the filter's watermark buffer
	// while Go processes (ProcessingData). Above the limit that is flow control, not a 413/500
	// (processor_state.cc addBufferData: only WaitingAllData fails the stream).
	for _, dir := range []string{"Request", "Response"} {
		t.Run(dir+"Backpressure_async", func(t *testing.T) {
			n := 3 << 20
			var r *resp
			if dir == "Request" {
				r = h.must(t, req{listener: "main", method: "POST", path: "/echo", body: string(body[:n]), headers: hdrs("x-test-mode", "async", "x-test-data-sleep-ms", "10", "x-test-dd-mode", "upper")})
				if rep := decodeEcho(t, r); r.status != 200 || rep.Body != string(upper[:n]) {
					t.Errorf("got %d with %d bytes, want 200 with %d upper-cased bytes", r.status, len(rep.Body), n)
				}
				return
			}
			r = h.must(t, req{listener: "main", path: fmt.Sprintf("/bytes/%d", n), headers: hdrs("x-test-mode", "async", "x-test-data-sleep-ms", "10", "x-test-ed-mode", "upper")})
			if r.status != 200 || r.body != string(upper[:n]) {
				t.Errorf("got %d with %d bytes, want 200 with %d upper-cased bytes", r.status, len(r.body), n)
			}
		})
	}
	t.Run("Passthrough", func(t *testing.T) {
		r := h.must(t, req{listener: "passthrough", method: "POST", path: "/echo", body: string(body)})
		if rep := decodeEcho(t, r); rep.Body != string(body) {
			t.Errorf("passthrough request body corrupted: %d bytes", len(rep.Body))
		}
		r = h.must(t, req{listener: "passthrough", path: fmt.Sprintf("/bytes/%d", big)})
		if sum([]byte(r.body)) != sum(body) {
			t.Errorf("passthrough response body corrupted: %d bytes", len(r.body))
		}
	})
}

// testPipelining: two requests written back to back on one connection are answered in order.
func testPipelining(t *testing.T, e *env) {
	h := e.h
	for _, mode := range modes() {
		t.Run(mode, func(t *testing.T) {
			rc := h.dial(t, "main")
			rc.write("GET /text?body=first HTTP/1.1\r\nhost: test.com\r\nx-test-mode: " + mode + "\r\nx-test-sleep-ms: 50\r\n\r\n" +
				"GET /text?body=second HTTP/1.1\r\nhost: test.com\r\nx-test-mode: " + mode + "\r\n\r\n")
			for _, want := range []string{"first", "second"} {
				res, body, err := rc.readResponse("GET")
				if err != nil || res.StatusCode != 200 || body != want {
					t.Fatalf("pipelined response: %v %v %q, want 200 %q", err, res, body, want)
				}
			}
		})
	}
}

// testAsyncConcurrency: requests parked in goroutines do not block the worker, so 20 concurrent
// requests that each sleep 300 ms in Go finish in about 300 ms, not 20*300/2.
func testAsyncConcurrency(t *testing.T, e *env) {
	h := e.h
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan string, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.do(t, req{listener: "main", path: "/status/200", headers: hdrs("x-test-mode", "async", "x-test-sleep-ms", "300")})
			if r.err != nil || r.status != 200 {
				errs <- fmt.Sprintf("%v %d", r.err, r.status)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// two header phases sleep: 600 ms per request
	if el := time.Since(start); el > 2500*time.Millisecond {
		t.Errorf("%d async requests took %v; the worker seems blocked while Go runs in goroutines", n, el)
	}
}

var _ = io.Discard
var _ = http.StatusOK

// testLifecyclePanics: a panic in OnLog, OnStreamComplete or OnDestroy is recovered by the SDK and
// logged; the response is unaffected and the host keeps serving.
func testLifecyclePanics(t *testing.T, e *env) {
	h := e.h
	for _, where := range []string{"on-log", "on-complete", "on-destroy"} {
		t.Run(where, func(t *testing.T) {
			before := e.panicCount(t, "main")
			for i := 0; i < 3; i++ {
				r := h.must(t, req{listener: "main", path: "/text?body=ok", headers: hdrs("x-test-panic", where)})
				if r.status != 200 || r.body != "ok" {
					t.Fatalf("got %d %q, want 200 ok", r.status, r.body)
				}
			}
			time.Sleep(50 * time.Millisecond)
			h.alive(t)
			if after := e.panicCount(t, "main"); after != before {
				t.Errorf("panic_error %d -> %d: a panic after the response is only logged (filter.go recoverPanic)", before, after)
			}
		})
	}
}

// testCodec: HTTP/1 codec defaults that Envoy applies before any filter runs.
func testCodec(t *testing.T, e *env) {
	h := e.h
	// http_protocol_options.accept_http_10 defaults to false: 426 (codec_impl.cc).
	t.Run("Http10Rejected_426", func(t *testing.T) {
		rc := h.dial(t, "main")
		rc.write("GET /echo HTTP/1.0\r\nhost: test.com\r\n\r\n")
		res, _, err := rc.readResponse("GET")
		if err != nil {
			t.Fatalf("response: %v", err)
		}
		if res.StatusCode != 426 {
			t.Errorf("got %d, want 426 Upgrade Required", res.StatusCode)
		}
	})
	// max_request_headers_kb defaults to 60: larger request headers get 431.
	t.Run("RequestHeadersTooLarge_431", func(t *testing.T) {
		rc := h.dial(t, "main")
		rc.write("GET /echo HTTP/1.1\r\nhost: test.com\r\nx-big: " + strings.Repeat("b", 70<<10) + "\r\n\r\n")
		res, _, err := rc.readResponse("GET")
		if err != nil {
			t.Fatalf("response: %v", err)
		}
		if res.StatusCode != 431 {
			t.Errorf("got %d, want 431", res.StatusCode)
		}
	})
	// Expect: 100-continue is answered by the connection manager (proxy_100_continue false) and
	// the expect header removed before the filters (conn_manager_impl.cc).
	t.Run("Expect100Continue", func(t *testing.T) {
		rc := h.dial(t, "main")
		rc.write("POST /echo HTTP/1.1\r\nhost: test.com\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\n")
		rc.c.SetReadDeadline(time.Now().Add(3 * time.Second))
		line, err := rc.r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
			t.Fatalf("want an interim 100 Continue, got %q %v", line, err)
		}
		if blank, err := rc.r.ReadString('\n'); err != nil || blank != "\r\n" {
			t.Fatalf("100 Continue not followed by an empty line: %q %v", blank, err)
		}
		rc.write("hello")
		res, body, err := rc.readResponse("POST")
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("final response: %v %v", err, res)
		}
		rep := decodeEcho(t, &resp{status: res.StatusCode, body: body})
		if rep.Body != "hello" || rep.header("expect") != "" {
			t.Errorf("upstream saw body %q expect %q, want hello and no expect header", rep.Body, rep.header("expect"))
		}
	})
	t.Run("HeadLocalReplyHasNoBody", func(t *testing.T) {
		rc := h.dial(t, "main")
		rc.write("HEAD /echo HTTP/1.1\r\nhost: test.com\r\nx-test-localreply: decode-header\r\n\r\n")
		res, body, err := rc.readResponse("HEAD")
		if err != nil || res.StatusCode != 403 || body != "" {
			t.Fatalf("got %v %v %q, want 403 without a body", err, res, body)
		}
		// the connection is still usable: no body bytes were written after the headers
		rc.write("GET /text?body=next HTTP/1.1\r\nhost: test.com\r\n\r\n")
		res, body, err = rc.readResponse("GET")
		if err != nil || res.StatusCode != 200 || body != "next" {
			t.Fatalf("next request on the connection: %v %v %q", err, res, body)
		}
	})
}

// testLogging: plugin logs go through envoyGoFilterLog at the host's -l level.
func testLogging(t *testing.T, e *env) {
	h := e.h
	marker := e.id("logmark")
	before := h.stats(t)["moe_host.capi.log"]
	r := h.must(t, req{listener: "main", path: "/status/200", headers: hdrs("x-test-log", marker)})
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	tb.Poll(3*time.Second, func() bool { return strings.Contains(h.Output(), "conformance-warn "+marker) })
	out := h.Output()
	for _, want := range []string{"conformance-info " + marker, "conformance-warn " + marker} {
		if !strings.Contains(out, want) {
			t.Errorf("host output lacks %q", want)
		}
	}
	if strings.Contains(out, "conformance-debug "+marker) {
		t.Errorf("a debug message was logged at -l info")
	}
	if after := h.stats(t)["moe_host.capi.log"]; after < before+2 {
		t.Errorf("moe_host.capi.log %d -> %d, want at least +2", before, after)
	}
}

// testWorkers: with --concurrency 2, connections are served by both workers (worker_id 0 and 1,
// which index the Go side's per-worker request maps).
func testWorkers(t *testing.T, e *env) {
	h := e.h
	seen := map[string]int{}
	for i := 0; i < 40; i++ {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		r := h.doWith(t, c, req{listener: "main", path: "/echo", headers: hdrs("x-test-basic", "1")})
		if r.err != nil || r.status != 200 {
			t.Fatalf("request %d: %v %d", i, r.err, r.status)
		}
		seen[decodeEcho(t, r).header("req-worker-id")]++
	}
	if len(seen) != 2 || seen["0"] == 0 || seen["1"] == 0 {
		t.Errorf("worker ids over 40 connections: %v, want both 0 and 1", seen)
	}
}
