package payloadlimit_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

const example = "envoy/examples/payload-limit.yaml"

func zeros(n int) string { return strings.Repeat("0", n) }

// The documented example, through moe-host and the real libgolang.so.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, example)

	// Content-Length over 1k: 413 before the body.
	resp, body := hosttest.Send(t, "POST", h.URL+"/api", zeros(2000))
	if resp.StatusCode != 413 || body != "Payload Too Large" {
		t.Fatalf("2000 bytes: %d %q", resp.StatusCode, body)
	}
	// Within: the upstream gets all of it.
	resp, _ = hosttest.Send(t, "POST", h.URL+"/api", zeros(500))
	if e := hosttest.DecodeEcho(t, resp); resp.StatusCode != 200 || e.BodyLen != 500 {
		t.Fatalf("500 bytes: %d %d", resp.StatusCode, e.BodyLen)
	}
	// Chunked (no Content-Length), over: 413.
	resp, body = sendChunked(t, h.URL+"/api", 4, 600)
	if resp.StatusCode != 413 || body != "Payload Too Large" {
		t.Fatalf("chunked 2400 bytes: %d %q", resp.StatusCode, body)
	}
	// Chunked, within.
	resp, _ = sendChunked(t, h.URL+"/api", 2, 500)
	if e := hosttest.DecodeEcho(t, resp); resp.StatusCode != 200 || e.BodyLen != 1000 || len(e.TransferEncoding) != 1 {
		t.Fatalf("chunked 1000 bytes: %d %d %v", resp.StatusCode, e.BodyLen, e.TransferEncoding)
	}
	// The upload route allows 1m, both ways of sending.
	resp, _ = hosttest.Send(t, "POST", h.URL+"/upload", zeros(200000))
	if e := hosttest.DecodeEcho(t, resp); resp.StatusCode != 200 || e.BodyLen != 200000 {
		t.Fatalf("upload 200000 bytes: %d %d", resp.StatusCode, e.BodyLen)
	}
	resp, _ = sendChunked(t, h.URL+"/upload", 20, 10000)
	if e := hosttest.DecodeEcho(t, resp); resp.StatusCode != 200 || e.BodyLen != 200000 {
		t.Fatalf("upload chunked 200000 bytes: %d %d", resp.StatusCode, e.BodyLen)
	}
	resp, body = hosttest.Send(t, "POST", h.URL+"/upload", zeros(1<<20+1))
	if resp.StatusCode != 413 {
		t.Fatalf("upload 1m+1: %d %q", resp.StatusCode, body)
	}

	// Responses: a Content-Length over 64k is replaced with 500.
	resp, body = hosttest.Get(t, h.URL+"/bytes/100000")
	if resp.StatusCode != 500 || body != "Internal Server Error" {
		t.Fatalf("/bytes/100000: %d %q", resp.StatusCode, body)
	}
	resp, _ = hosttest.Get(t, h.URL+"/bytes/60000")
	if n, _ := io.Copy(io.Discard, resp.Body); resp.StatusCode != 200 || n != 60000 {
		t.Fatalf("/bytes/60000: %d %d", resp.StatusCode, n)
	}
	resp.Body.Close()
	// A chunked response over 64k has already started: it is cut off.
	res, err := http.Get(h.URL + "/chunked?n=100&size=1024")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || err == nil || n > 64<<10 {
		t.Fatalf("chunked response over the limit: status %d, read %d bytes, err %v (want a cut-off response)", res.StatusCode, n, err)
	}
	t.Logf("chunked response over the limit: status 200, %d bytes, then %v", n, err)

	for name, want := range map[string]int64{
		"moe_payload_limit_request_too_large":           3,
		"moe_payload_limit_request_too_large_streamed":  1,
		"moe_payload_limit_response_too_large":          2,
		"moe_payload_limit_response_too_large_streamed": 1,
	} {
		if got := h.Counter(t, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// sendChunked POSTs n chunks of size bytes with chunked framing and returns
// the response (a 200 unread, otherwise read).
func sendChunked(t *testing.T, url string, n, size int) (*http.Response, string) {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < n; i++ {
			if _, err := pw.Write([]byte(zeros(size))); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, err := http.NewRequest("POST", url, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1 // chunked
	return hosttest.Do(t, req)
}

// startExampleWith runs the example like hosttest.StartExample, but with the
// given upstream instead of the echo upstream.
func startExampleWith(t *testing.T, upstreamPort int) *hosttest.Host {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(hosttest.RepoRoot(t), example))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := strings.NewReplacer(
		"port_value: 10000", "port_value: {{.Port}}",
		"port_value: 9901", "port_value: {{.AdminPort}}",
		"port_value: 8080", "port_value: {{.UpstreamPort}}",
		"library_path: out/libgolang.so", "library_path: {{.Library}}",
	).Replace(string(raw))
	return hosttest.Start(t, tmpl, hosttest.Vars{"UpstreamPort": upstreamPort})
}

// received is what the recording upstream read of one request.
type received struct {
	bytes int64
	err   error
}

// recordingUpstream answers 200 after reading the whole request body and
// reports how much of it arrived and how reading it ended. With early set it
// answers (headers flushed) before reading the body.
func recordingUpstream(t *testing.T, early bool) (int, <-chan received) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan received, 4)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if early {
			// Go's HTTP/1 server writes nothing before the body is read
			// unless told to.
			http.NewResponseController(w).EnableFullDuplex()
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
		}
		n, err := io.Copy(io.Discard, r.Body)
		got <- received{n, err}
		if !early {
			fmt.Fprintf(w, "read %d\n", n)
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port, got
}

// rawChunked sends a chunked POST to /api over one connection, chunk by
// chunk with a pause between, and returns the raw bytes the client got back
// until the connection closed (or 5 s).
func rawChunked(t *testing.T, addr string, chunks ...int) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var out strings.Builder
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); io.Copy(&out, c) }()
	fmt.Fprintf(c, "POST /api HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, n := range chunks {
		time.Sleep(100 * time.Millisecond) // let the previous part reach the upstream
		if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", n, zeros(n)); err != nil {
			break // the proxy closed the connection after its reply
		}
	}
	// The request ends only after the proxy had time to answer: a reply
	// sent before the request ended closes the connection.
	time.Sleep(300 * time.Millisecond)
	fmt.Fprintf(c, "0\r\n\r\n")
	wg.Wait()
	return out.String()
}

// What a client and the upstream see when a chunked request body passes the
// limit after part of it was forwarded: the client gets the 413 (and the
// connection closes, as for any response sent before the request ended); the
// upstream got the headers and the chunks before the limit, and then its
// connection is closed mid-body, so it never sees a complete request.
func TestE2EChunkedRequestOverTheLimitMidStream(t *testing.T) {
	port, got := recordingUpstream(t, false)
	h := startExampleWith(t, port)
	out := rawChunked(t, strings.TrimPrefix(h.URL, "http://"), 600, 600)
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(out)), nil)
	if err != nil {
		t.Fatalf("client got %q: %v", out, err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || string(b) != "Payload Too Large" || !resp.Close {
		t.Fatalf("client got %d %q close=%v: %q", resp.StatusCode, b, resp.Close, out)
	}
	select {
	case r := <-got:
		if r.err == nil || r.bytes != 600 {
			t.Fatalf("upstream read %d bytes, err %v; want the first 600 bytes and then a broken body", r.bytes, r.err)
		}
		t.Logf("upstream read %d bytes, then %v", r.bytes, r.err)
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream saw no request")
	}
	if n := h.Counter(t, "moe_payload_limit_request_too_large_streamed"); n != 1 {
		t.Fatalf("request_too_large_streamed = %d", n)
	}
	if n := h.Counter(t, "http.demo.downstream_rq_response_before_rq_complete"); n != 1 {
		t.Fatalf("downstream_rq_response_before_rq_complete = %d", n)
	}
}

// An upstream that answers before reading the request: when the body then
// passes the limit, the response has started and cannot be replaced, so the
// stream is reset (the client sees a 200 that is cut off), as in Envoy.
func TestE2EChunkedRequestOverTheLimitAfterTheResponseStarted(t *testing.T) {
	port, got := recordingUpstream(t, true)
	h := startExampleWith(t, port)
	out := rawChunked(t, strings.TrimPrefix(h.URL, "http://"), 600, 600)
	if !strings.HasPrefix(out, "HTTP/1.1 200") {
		t.Fatalf("client got %q", out)
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(out)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatalf("the response ended normally: %q", out)
	}
	t.Logf("client got %q", out)
	select {
	case r := <-got:
		if r.err == nil {
			t.Fatalf("upstream read a complete body of %d bytes", r.bytes)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream saw no request")
	}
}
