// Package nettest drives out/moe-host-netonly (moe-host's network side with a stub connection
// manager that proxies everything to the first cluster) with real HTTP/1.1 traffic: framing in
// both directions, trailers, keep-alive and pool reuse, codec errors, admin, graceful stop.
package nettest

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// hostBinary is out/moe-host-netonly relative to this file's directory, or $MOE_NETONLY_BIN
// (e.g. out/moe-host-netonly-asan).
func hostBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("MOE_NETONLY_BIN"); bin != "" {
		return bin
	}
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", "..", "..", "out", "moe-host-netonly")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("MOE_REQUIRE_HOST") != "" {
			t.Fatalf("%s missing (build it with make -C cgo/host netonly): %v", bin, err)
		}
		t.Skipf("%s missing; run make -C cgo/host netonly", bin)
	}
	return bin
}

// ---------------------------------------------------------------------------------------------
// Upstream
// ---------------------------------------------------------------------------------------------

type upstream struct {
	addr     string
	port     int
	conns    atomic.Int64 // TCP connections accepted
	lastReq  atomic.Value // *http.Request headers seen last (http.Header)
	lastTE   atomic.Value // []string TransferEncoding of the last request
	hangs    atomic.Int64 // /hang requests whose client (moe-host) went away
	listener net.Listener
}

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{addr: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port, listener: ln}
	mux := http.NewServeMux()
	record := func(r *http.Request) {
		u.lastReq.Store(r.Header.Clone())
		u.lastTE.Store(append([]string{}, r.TransferEncoding...))
	}
	// /echo: echoes the body; x-chunked-response: 1 streams it back without content-length.
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("x-upstream-host", r.Host)
		w.Header().Set("x-request-length", strconv.Itoa(len(body)))
		for k, v := range r.Trailer {
			w.Header().Set("x-got-trailer-"+strings.ToLower(k), strings.Join(v, ","))
		}
		if r.Header.Get("x-chunked-response") != "" {
			f := w.(http.Flusher)
			for off := 0; off < len(body); off += 64 * 1024 {
				end := min(off+64*1024, len(body))
				w.Write(body[off:end])
				f.Flush()
			}
			return
		}
		w.Header().Set("content-length", strconv.Itoa(len(body)))
		w.Write(body)
	})
	mux.HandleFunc("/trailers", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Trailer", "X-Trailer-A, X-Trailer-B")
		w.Write([]byte("body-with-trailers"))
		w.(http.Flusher).Flush()
		w.Header().Set("X-Trailer-A", "alpha")
		w.Header().Set("X-Trailer-B", "beta")
	})
	// /hang never answers; it counts the requests moe-host abandons (upstream reset).
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			u.hangs.Add(1)
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		time.Sleep(1500 * time.Millisecond)
		w.Write([]byte("slow done"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("content-type", "text/plain")
		fmt.Fprintf(w, "hello %s %s", r.Method, r.URL.Path)
	})
	srv := &http.Server{Handler: mux, ConnState: func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return u
}

// ---------------------------------------------------------------------------------------------
// Host process
// ---------------------------------------------------------------------------------------------

type host struct {
	// expectRefusals: the test provokes loopback-guard refusals on purpose.
	expectRefusals bool
	cmd            *exec.Cmd
	port           int
	adminPort      int
	mu             sync.Mutex
	stderr         bytes.Buffer
	exited         chan error
}

func (h *host) addr() string        { return fmt.Sprintf("127.0.0.1:%d", h.port) }
func (h *host) adminURL() string    { return fmt.Sprintf("http://127.0.0.1:%d", h.adminPort) }
func (h *host) url(p string) string { return "http://" + h.addr() + p }
func (h *host) logs() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stderr.String()
}

func bootstrapJSON(endpointPort int) map[string]any {
	return map[string]any{
		"admin": map[string]any{"address": "127.0.0.1", "port": 0},
		"listeners": []any{map[string]any{
			"name":                              "main",
			"address":                           map[string]any{"address": "127.0.0.1", "port": 0},
			"per_connection_buffer_limit_bytes": 1048576,
			"hcm": map[string]any{
				"stat_prefix":            "ingress_http",
				"max_request_headers_kb": 60,
				"request_timeout_ms":     0,
				"stream_idle_timeout_ms": 300000,
				"http_filters": []any{
					map[string]any{"name": "envoy.filters.http.router", "type": "router"},
				},
				"route_config": map[string]any{
					"name": "local_route", "per_filter_config": map[string]any{},
					"virtual_hosts": []any{map[string]any{
						"name": "local", "domains": []any{"*"}, "per_filter_config": map[string]any{},
						"routes": []any{map[string]any{
							"name":  "all",
							"match": map[string]any{"kind": "prefix", "value": "/", "case_sensitive": true, "headers": []any{}},
							"route": map[string]any{"cluster": "backend", "cluster_header": "",
								"weighted_clusters": []any{}, "timeout_ms": 15000},
							"per_filter_config": map[string]any{},
						}},
					}},
				},
			},
		}},
		"clusters": []any{map[string]any{
			"name": "backend", "type": "STATIC", "connect_timeout_ms": 1000, "dns_refresh_rate_ms": 5000,
			"per_connection_buffer_limit_bytes": 1048576,
			"endpoints":                         []any{map[string]any{"address": "127.0.0.1", "port": endpointPort}},
		}},
	}
}

var (
	listenerRe = regexp.MustCompile(`listener main bound to 127\.0\.0\.1:(\d+)`)
	adminRe    = regexp.MustCompile(`admin address: 127\.0\.0\.1:(\d+)`)
)

func startHost(t *testing.T, endpointPort int, extraArgs ...string) *host {
	t.Helper()
	return startHostWith(t, bootstrapJSON(endpointPort), extraArgs...)
}

func startHostWith(t *testing.T, bootstrap map[string]any, extraArgs ...string) *host {
	t.Helper()
	bin := hostBinary(t)
	cfg, _ := json.Marshal(bootstrap)
	path := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-c", path, "--concurrency", "2", "-l", "info"}, extraArgs...)
	h := &host{cmd: exec.Command(bin, args...), exited: make(chan error, 1)}
	h.cmd.Env = append(os.Environ(), hosttest.LoopbackOnlyEnv)
	pipe, err := h.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			h.mu.Lock()
			h.stderr.WriteString(sc.Text() + "\n")
			h.mu.Unlock()
		}
		h.exited <- h.cmd.Wait()
	}()
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			if h.adminPort != 0 && !h.expectRefusals {
				hosttest.CheckGuard(t, h.adminURL(), h.logs())
			}
			h.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("moe-host stderr:\n%s", h.logs())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		logs := h.logs()
		if m := listenerRe.FindStringSubmatch(logs); m != nil && h.port == 0 {
			h.port, _ = strconv.Atoi(m[1])
		}
		if m := adminRe.FindStringSubmatch(logs); m != nil && h.adminPort == 0 {
			h.adminPort, _ = strconv.Atoi(m[1])
		}
		if h.port != 0 && h.adminPort != 0 {
			resp, err := http.Get(h.adminURL() + "/ready")
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 && string(b) == "LIVE\n" {
					return h
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("moe-host did not become ready; stderr:\n%s", h.logs())
	return nil
}

func (h *host) stat(t *testing.T, name string) int64 {
	t.Helper()
	resp, err := http.Get(h.adminURL() + "/stats?filter=" + regexp.QuoteMeta(name))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && k == name {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP helpers (the Go client normalises framing; these do not)
// ---------------------------------------------------------------------------------------------

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

func readResponse(t *testing.T, br *bufio.Reader, method string) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	return resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	resp.Body.Close()
	return string(b)
}

// expectClosed asserts the server closes the connection (EOF, not a timeout).
func expectClosed(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err := br.ReadByte()
	if err == nil {
		t.Fatalf("expected the connection to be closed, read more data")
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection not closed by the server")
	}
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

func TestNetwork(t *testing.T) {
	up := startUpstream(t)
	h := startHost(t, up.port)

	t.Run("GetContentLength", func(t *testing.T) {
		resp, err := http.Get(h.url("/hello?x=1"))
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, resp)
		if resp.StatusCode != 200 || body != "hello GET /hello" {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		if got := up.lastReq.Load().(http.Header).Get("User-Agent"); got == "" {
			t.Fatalf("user-agent not forwarded")
		}
	})

	t.Run("PostContentLengthBothWays", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: example.com\r\nContent-Length: 11\r\n\r\nhello world")
		resp := readResponse(t, br, "POST")
		body := readBody(t, resp)
		if resp.StatusCode != 200 || body != "hello world" || resp.ContentLength != 11 {
			t.Fatalf("got %d %q cl=%d", resp.StatusCode, body, resp.ContentLength)
		}
		if resp.Header.Get("x-upstream-host") != "example.com" {
			t.Fatalf("upstream saw host %q", resp.Header.Get("x-upstream-host"))
		}
		if te := up.lastTE.Load().([]string); len(te) != 0 {
			t.Fatalf("upstream saw transfer-encoding %v for a content-length request", te)
		}
	})

	t.Run("PostChunkedBothWays", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nx-chunked-response: 1\r\n\r\n"+
			"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
		resp := readResponse(t, br, "POST")
		if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
			t.Fatalf("response not chunked: %v cl=%d", resp.TransferEncoding, resp.ContentLength)
		}
		if body := readBody(t, resp); body != "hello world" {
			t.Fatalf("body %q", body)
		}
		if te := up.lastTE.Load().([]string); len(te) != 1 || te[0] != "chunked" {
			t.Fatalf("upstream saw transfer-encoding %v, want chunked", te)
		}
	})

	t.Run("RequestTrailers", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTrailer: x-req-trailer\r\n\r\n"+
			"3\r\nabc\r\n0\r\nx-req-trailer: tv\r\n\r\n")
		resp := readResponse(t, br, "POST")
		body := readBody(t, resp)
		if body != "abc" || resp.Header.Get("x-got-trailer-x-req-trailer") != "tv" {
			t.Fatalf("body %q headers %v", body, resp.Header)
		}
	})

	t.Run("ResponseTrailers", func(t *testing.T) {
		resp, err := http.Get(h.url("/trailers"))
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, resp)
		if body != "body-with-trailers" {
			t.Fatalf("body %q", body)
		}
		if resp.Trailer.Get("X-Trailer-A") != "alpha" || resp.Trailer.Get("X-Trailer-B") != "beta" {
			t.Fatalf("trailers %v", resp.Trailer)
		}
	})

	t.Run("FiveMiBStreamedBothWays", func(t *testing.T) {
		payload := make([]byte, 5<<20)
		rand.Read(payload)
		want := sha256.Sum256(payload)
		for _, mode := range []string{"content-length", "chunked"} {
			var req *http.Request
			if mode == "chunked" {
				pr, pw := io.Pipe()
				go func() {
					for off := 0; off < len(payload); off += 100_000 {
						pw.Write(payload[off:min(off+100_000, len(payload))])
					}
					pw.Close()
				}()
				req, _ = http.NewRequest("POST", h.url("/echo"), pr)
				req.Header.Set("x-chunked-response", "1")
			} else {
				req, _ = http.NewRequest("POST", h.url("/echo"), bytes.NewReader(payload))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("%s: reading: %v", mode, err)
			}
			if resp.StatusCode != 200 || sha256.Sum256(got) != want {
				t.Fatalf("%s: status %d, %d bytes back, content differs", mode, resp.StatusCode, len(got))
			}
			if mode == "chunked" && resp.ContentLength != -1 {
				t.Fatalf("chunked response expected, got content-length %d", resp.ContentLength)
			}
		}
	})

	t.Run("KeepAliveAndPoolReuse", func(t *testing.T) {
		// Let the pool settle: connections from earlier subtests may still be idle in it.
		reuseBefore := h.stat(t, "moe_host.upstream_cx_reuse")
		downBefore := h.stat(t, "moe_host.downstream_cx_total")
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		for i := 0; i < 3; i++ {
			fmt.Fprintf(c, "GET /ka%d HTTP/1.1\r\nHost: h\r\n\r\n", i)
			resp := readResponse(t, br, "GET")
			if body := readBody(t, resp); body != fmt.Sprintf("hello GET /ka%d", i) {
				t.Fatalf("request %d: body %q", i, body)
			}
			if resp.Close {
				t.Fatalf("request %d: connection: close on a keep-alive request", i)
			}
		}
		// Two workers each have their own pool: at least the 2nd and 3rd requests on this
		// connection (same worker) reuse the upstream connection of the 1st.
		if got := h.stat(t, "moe_host.upstream_cx_reuse") - reuseBefore; got < 2 {
			t.Fatalf("upstream_cx_reuse grew by %d, want >= 2", got)
		}
		if got := h.stat(t, "moe_host.downstream_cx_total") - downBefore; got != 1 {
			t.Fatalf("downstream_cx_total grew by %d, want 1", got)
		}
	})

	t.Run("Pipelined", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "GET /p1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyzGET /p3 HTTP/1.1\r\nHost: h\r\n\r\n")
		for _, want := range []string{"hello GET /p1", "xyz", "hello GET /p3"} {
			resp := readResponse(t, br, "GET")
			if body := readBody(t, resp); body != want {
				t.Fatalf("got %q want %q", body, want)
			}
		}
	})

	t.Run("HeadRequest", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "HEAD /x HTTP/1.1\r\nHost: h\r\n\r\nGET /after-head HTTP/1.1\r\nHost: h\r\n\r\n")
		resp := readResponse(t, br, "HEAD")
		readBody(t, resp)
		if resp.StatusCode != 200 {
			t.Fatalf("HEAD status %d", resp.StatusCode)
		}
		resp = readResponse(t, br, "GET")
		if body := readBody(t, resp); body != "hello GET /after-head" {
			t.Fatalf("after HEAD: %q", body)
		}
	})

	t.Run("AbsoluteFormTarget", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		io.WriteString(c, "GET http://abs.example:81/echo?q=1 HTTP/1.1\r\nHost: other\r\n\r\n")
		resp := readResponse(t, br, "GET")
		readBody(t, resp)
		if resp.StatusCode != 200 || resp.Header.Get("x-upstream-host") != "abs.example:81" {
			t.Fatalf("status %d, upstream host %q", resp.StatusCode, resp.Header.Get("x-upstream-host"))
		}
	})

	t.Run("DownstreamCloseResetsUpstream", func(t *testing.T) {
		before := up.hangs.Load()
		c, err := net.Dial("tcp", h.addr())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET /hang HTTP/1.1\r\nHost: h\r\n\r\n")
		time.Sleep(200 * time.Millisecond)
		c.Close()
		deadline := time.Now().Add(3 * time.Second)
		for up.hangs.Load() == before {
			if time.Now().After(deadline) {
				t.Fatalf("upstream request not reset after the client went away")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("ConnectionClose", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "GET /bye HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
		resp := readResponse(t, br, "GET")
		if body := readBody(t, resp); body != "hello GET /bye" {
			t.Fatalf("body %q", body)
		}
		if !resp.Close {
			t.Fatalf("response lacks connection: close: %v", resp.Header)
		}
		expectClosed(t, c, br)
		if h := up.lastReq.Load().(http.Header); h.Get("Connection") != "" {
			t.Fatalf("hop-by-hop connection header forwarded upstream: %v", h)
		}
	})

	codecErrors := []struct {
		name    string
		request string
		status  int
		stat    string
	}{
		{"ContentLengthAndChunked", "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400, "moe_host.codec.400"},
		{"BadSyntax", "GARBAGE\r\n\r\n", 400, "moe_host.codec.400"},
		{"BadRequestLine", "GET /x HTTP/1.1 extra\r\nHost: h\r\n\r\n", 400, "moe_host.codec.400"},
		{"MissingHost", "GET /x HTTP/1.1\r\n\r\n", 400, "moe_host.codec.400"},
		{"BadAbsoluteURL", "GET ftp://x/y HTTP/1.1\r\nHost: h\r\n\r\n", 400, "moe_host.codec.400"},
		{"HeaderTooLarge", "GET /x HTTP/1.1\r\nHost: h\r\nx-big: " + strings.Repeat("a", 70*1024) + "\r\n\r\n", 431, "moe_host.codec.431"},
		{"TooManyHeaders", "GET /x HTTP/1.1\r\nHost: h\r\n" + strings.Repeat("x-h: 1\r\n", 101) + "\r\n", 431, "moe_host.codec.431"},
		{"Http10", "GET /x HTTP/1.0\r\nHost: h\r\n\r\n", 426, "moe_host.codec.426"},
		{"NulInHeaderValue", "GET /x HTTP/1.1\r\nHost: h\r\nx-a: a\x00b\r\n\r\n", 400, "moe_host.codec.400"},
		{"BareCRInHeaderValue", "GET /x HTTP/1.1\r\nHost: h\r\nx-a: a\rb\r\n\r\n", 400, "moe_host.codec.400"},
		{"DifferingContentLengths", "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400, "moe_host.codec.400"},
		// Envoy answers 501 for a transfer-coding it does not implement (codec_impl.cc:930-937).
		{"NonChunkedTransferEncoding", "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501, ""},
	}
	for _, tc := range codecErrors {
		t.Run("CodecError/"+tc.name, func(t *testing.T) {
			before := int64(0)
			if tc.stat != "" {
				before = h.stat(t, tc.stat)
			}
			c := dial(t, h.addr())
			br := bufio.NewReader(c)
			io.WriteString(c, tc.request)
			resp := readResponse(t, br, "GET")
			body := readBody(t, resp)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, body, tc.status)
			}
			if !resp.Close {
				t.Fatalf("error response without connection: close")
			}
			if body != http.StatusText(tc.status) {
				t.Fatalf("body %q", body)
			}
			expectClosed(t, c, br)
			if tc.stat != "" {
				if got := h.stat(t, tc.stat); got != before+1 {
					t.Fatalf("%s = %d, want %d", tc.stat, got, before+1)
				}
			}
		})
	}

	t.Run("BadChunkAfterHeaders", func(t *testing.T) {
		// The request is already streaming upstream when the body turns out to be broken: the
		// stream is reset and the client gets a 400 (no response started yet) or a close.
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			if resp.StatusCode != 400 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			readBody(t, resp)
		}
		expectClosed(t, c, br)
	})

	t.Run("Stats", func(t *testing.T) {
		resp, err := http.Get(h.adminURL() + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		text := readBody(t, resp)
		for _, want := range []string{"moe_host.downstream_cx_total: ", "moe_host.downstream_cx_active: ", "moe_host.upstream_cx_total: "} {
			if !strings.Contains(text, want) {
				t.Fatalf("/stats lacks %q:\n%s", want, text)
			}
		}
		resp, _ = http.Get(h.adminURL() + "/stats?filter=downstream_cx")
		filtered := readBody(t, resp)
		if strings.Contains(filtered, "upstream_cx_total") || !strings.Contains(filtered, "downstream_cx_total") {
			t.Fatalf("filter not applied:\n%s", filtered)
		}
		resp, _ = http.Get(h.adminURL() + "/stats/prometheus")
		prom := readBody(t, resp)
		for _, want := range []string{"# TYPE envoy_moe_host_downstream_cx_total counter", "# TYPE envoy_moe_host_downstream_cx_active gauge", "envoy_moe_host_upstream_cx_total{} "} {
			if !strings.Contains(prom, want) {
				t.Fatalf("/stats/prometheus lacks %q:\n%s", want, prom)
			}
		}
		resp, _ = http.Get(h.adminURL() + "/server_info")
		var info map[string]any
		if err := json.Unmarshal([]byte(readBody(t, resp)), &info); err != nil || info["state"] != "LIVE" {
			t.Fatalf("/server_info: %v %v", info, err)
		}
	})

	t.Run("OverrideHost", func(t *testing.T) {
		// A closed loopback port that is not the cluster's host: strict fails, non-strict falls
		// back to the cluster (an override that wrongly took effect would fail to connect).
		stray := closedPort(t)
		for stray == up.port {
			stray = closedPort(t)
		}
		req, _ := http.NewRequest("GET", h.url("/o"), nil)
		req.Header.Set("x-moe-override-host", fmt.Sprintf("127.0.0.1:%d", stray))
		req.Header.Set("x-moe-override-strict", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, resp)
		if resp.StatusCode != 503 || !strings.Contains(body, "override host not found") {
			t.Fatalf("strict: %d %q", resp.StatusCode, body)
		}
		req.Header.Del("x-moe-override-strict")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(t, resp); resp.StatusCode != 200 {
			t.Fatalf("non-strict fallback: %d %q", resp.StatusCode, body)
		}
		req.Header.Set("x-moe-override-host", "127.0.0.1")
		req.Header.Set("x-moe-override-strict", "1")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(t, resp); resp.StatusCode != 200 {
			t.Fatalf("matching override: %d %q", resp.StatusCode, body)
		}
	})
}

// closedPort is a loopback port the OS just handed out and that nobody listens on now.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func TestUpstreamRefused503(t *testing.T) {
	h := startHost(t, closedPort(t))
	before := h.stat(t, "moe_host.upstream_cx_connect_fail")
	resp, err := http.Get(h.url("/x"))
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	if resp.StatusCode != 503 || !strings.Contains(body, "delayed connect error: 111") {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if got := h.stat(t, "moe_host.upstream_cx_connect_fail"); got != before+1 {
		t.Fatalf("upstream_cx_connect_fail = %d, want %d", got, before+1)
	}
}

func TestUpstreamClosesMidResponse(t *testing.T) {
	// An upstream that promises 100 bytes, sends 5 and closes: the client must see the
	// connection end rather than a complete response.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				br := bufio.NewReader(c)
				http.ReadRequest(br)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello")
				time.Sleep(50 * time.Millisecond)
				c.Close()
			}(c)
		}
	}()
	h := startHost(t, ln.Addr().(*net.TCPAddr).Port)
	c := dial(t, h.addr())
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n")
	resp := readResponse(t, br, "GET")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err == nil || len(b) == 100 {
		t.Fatalf("expected a truncated body, got %d bytes err=%v", len(b), err)
	}
}

func TestSigtermWaitsForInflightRequest(t *testing.T) {
	up := startUpstream(t)
	h := startHost(t, up.port, "--drain-time-s", "5")
	type result struct {
		status int
		body   string
		close  bool
		err    error
	}
	done := make(chan result, 1)
	go func() {
		c, err := net.Dial("tcp", h.addr())
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			done <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		done <- result{status: resp.StatusCode, body: string(b), close: resp.Close, err: err}
	}()
	// An idle keep-alive connection must be closed by the drain.
	idle := dial(t, h.addr())
	idleReader := bufio.NewReader(idle)
	io.WriteString(idle, "GET /idle HTTP/1.1\r\nHost: h\r\n\r\n")
	readBody(t, readResponse(t, idleReader, "GET"))

	time.Sleep(300 * time.Millisecond) // the slow request is in flight upstream
	start := time.Now()
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, idle, idleReader)
	// New connections are refused once listeners are closed.
	time.Sleep(100 * time.Millisecond)
	if c, err := net.DialTimeout("tcp", h.addr(), time.Second); err == nil {
		c.Close()
		t.Fatalf("listener still accepting after SIGTERM")
	}
	r := <-done
	if r.err != nil || r.status != 200 || r.body != "slow done" {
		t.Fatalf("in-flight request: %+v", r)
	}
	if !r.close {
		t.Fatalf("in-flight response during drain lacks connection: close")
	}
	select {
	case err := <-h.exited:
		if err != nil {
			t.Fatalf("moe-host exit: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("moe-host did not exit after SIGTERM")
	}
	if time.Since(start) > 4*time.Second {
		t.Fatalf("exit took %v; it should follow the last stream, not the drain time", time.Since(start))
	}
}

func TestQuitQuitQuit(t *testing.T) {
	up := startUpstream(t)
	h := startHost(t, up.port)
	resp, err := http.Post(h.adminURL()+"/quitquitquit", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	select {
	case err := <-h.exited:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no exit after /quitquitquit")
	}
}

func TestCommandLine(t *testing.T) {
	bin := hostBinary(t)
	out, err := exec.Command(bin, "-c", "x.json", "--no-such-flag").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "--no-such-flag") {
		t.Fatalf("unknown flag: err=%v out=%s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"listeners":[{"name":"x"}]}`), 0o644)
	out, err = exec.Command(bin, "-c", bad, "--base-id", "3", "--disable-hot-restart").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "$.listeners[0].address") {
		t.Fatalf("bad config: err=%v out=%s", err, out)
	}
}

// rawUpstream accepts connections and hands each to serve, for upstream behaviour a Go
// http.Server would not produce.
func rawUpstream(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) (port int, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, conns
}

func TestUpstreamFraming(t *testing.T) {
	t.Run("CloseDelimitedBody", func(t *testing.T) {
		port, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
			http.ReadRequest(br)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-eof")
		})
		h := startHost(t, port)
		resp, err := http.Get(h.url("/x"))
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(t, resp); resp.StatusCode != 200 || body != "until-eof" {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})

	t.Run("Skips100ContinueAndNoReuseAfterClose", func(t *testing.T) {
		port, conns := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
				return
			}
		})
		h := startHost(t, port, "--concurrency", "1")
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		for i := 0; i < 2; i++ {
			io.WriteString(c, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n")
			resp := readResponse(t, br, "GET")
			if body := readBody(t, resp); resp.StatusCode != 201 || body != "ok" {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
		}
		if n := conns.Load(); n != 2 {
			t.Fatalf("upstream connections %d, want 2 (connection: close must not be reused)", n)
		}
	})

	t.Run("HeadResponseWithContentLength", func(t *testing.T) {
		port, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				if req.Method == "HEAD" {
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n")
				} else {
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nget")
				}
			}
		})
		h := startHost(t, port, "--concurrency", "1")
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		io.WriteString(c, "HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n")
		resp := readResponse(t, br, "HEAD")
		readBody(t, resp)
		if resp.ContentLength != 1234 {
			t.Fatalf("HEAD content-length %d", resp.ContentLength)
		}
		io.WriteString(c, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n")
		resp = readResponse(t, br, "GET")
		if body := readBody(t, resp); body != "get" {
			t.Fatalf("GET after HEAD: %q", body)
		}
		if reuse := h.stat(t, "moe_host.upstream_cx_reuse"); reuse != 1 {
			t.Fatalf("upstream_cx_reuse %d, want 1", reuse)
		}
	})
}

func TestExpectContinue(t *testing.T) {
	up := startUpstream(t)
	h := startHost(t, up.port)
	c := dial(t, h.addr())
	br := bufio.NewReader(c)
	io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("interim response %q %v", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "body")
	resp := readResponse(t, br, "POST")
	if body := readBody(t, resp); body != "body" {
		t.Fatalf("body %q", body)
	}
	if got := up.lastReq.Load().(http.Header).Get("Expect"); got != "" {
		t.Fatalf("expect forwarded upstream: %q", got)
	}
}

func TestStrictDNS(t *testing.T) {
	up := startUpstream(t)
	cfg := bootstrapJSON(up.port)
	cluster := cfg["clusters"].([]any)[0].(map[string]any)
	cluster["type"] = "STRICT_DNS"
	cluster["dns_refresh_rate_ms"] = 200
	cluster["endpoints"] = []any{map[string]any{"address": "localhost", "port": up.port}}
	h := startHostWith(t, cfg)
	for i := 0; i < 3; i++ {
		resp, err := http.Get(h.url("/dns"))
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(t, resp); resp.StatusCode != 200 || body != "hello GET /dns" {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		time.Sleep(250 * time.Millisecond) // across a re-resolution
	}
}

func TestConnectTimeout(t *testing.T) {
	// A listening socket with a full accept queue drops further SYNs, so a connect hangs.
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, _ := syscall.Getsockname(fd)
	port := sa.(*syscall.SockaddrInet4).Port
	var fillers []net.Conn
	for i := 0; i < 4; i++ {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 300*time.Millisecond); err == nil {
			fillers = append(fillers, c)
		}
	}
	defer func() {
		for _, c := range fillers {
			c.Close()
		}
	}()
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 300*time.Millisecond); err == nil {
		c.Close()
		t.Skip("accept queue did not fill; cannot simulate a hanging connect here")
	}
	h := startHost(t, port)
	start := time.Now()
	resp, err := http.Get(h.url("/x"))
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	if resp.StatusCode != 503 || !strings.Contains(body, "connect timeout") {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if d := time.Since(start); d < 900*time.Millisecond || d > 3*time.Second {
		t.Fatalf("503 after %v, want about connect_timeout_ms (1s)", d)
	}
}

func TestConcurrentLoad(t *testing.T) {
	up := startUpstream(t)
	h := startHost(t, up.port)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				body := strings.Repeat(fmt.Sprintf("g%di%d-", g, i), 1+i*50)
				req, _ := http.NewRequest("POST", h.url("/echo"), strings.NewReader(body))
				if i%3 == 0 {
					req.Header.Set("x-chunked-response", "1")
				}
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(got) != body {
					errs <- fmt.Errorf("g%d i%d: %d bytes back, err %v", g, i, len(got), err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if active := h.stat(t, "moe_host.upstream_cx_total"); active > 40 {
		t.Fatalf("upstream_cx_total %d: connections are not being reused", active)
	}
}

// TestLoopbackGuard: with MOE_HOST_LOOPBACK_ONLY=1 (every harness sets it) a connect outside
// 127.0.0.0/8 and ::1 is refused before the socket connects and fails as an immediate connect
// error (connection_impl.cc ClientConnectionImpl::connect), counted; a STRICT_DNS address is
// checked the same way once resolved, and a name that needs a DNS server is not resolved at all.
// 192.0.2.1 is TEST-NET-1 (RFC 5737).
func TestLoopbackGuard(t *testing.T) {
	cases := []struct {
		name, kind, address string
		wantBody, wantStat  string
	}{
		{"Static", "STATIC", "192.0.2.1", "immediate connect error: 1|remote address:192.0.2.1:80", "moe_host.upstream_cx_non_loopback_refused"},
		{"StrictDnsNumeric", "STRICT_DNS", "192.0.2.1", "immediate connect error: 1|remote address:192.0.2.1:80", "moe_host.upstream_cx_non_loopback_refused"},
		{"StrictDnsName", "STRICT_DNS", "upstream.invalid", "no healthy upstream", "moe_host.upstream_dns_non_local_refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := bootstrapJSON(80)
			cluster := cfg["clusters"].([]any)[0].(map[string]any)
			cluster["type"] = c.kind
			cluster["endpoints"] = []any{map[string]any{"address": c.address, "port": 80}}
			h := startHostWith(t, cfg)
			h.expectRefusals = true
			before := h.stat(t, c.wantStat)
			resp, err := http.Get(h.url("/x"))
			if err != nil {
				t.Fatal(err)
			}
			body := readBody(t, resp)
			if resp.StatusCode != 503 || !strings.Contains(body, c.wantBody) {
				t.Fatalf("got %d %q, want 503 with %q", resp.StatusCode, body, c.wantBody)
			}
			// A connect is refused per request; a name already when the cluster first resolves.
			got := h.stat(t, c.wantStat)
			if c.wantStat == "moe_host.upstream_dns_non_local_refused" && (before < 1 || got < before) {
				t.Fatalf("%s = %d at start, %d after the request: want the resolution refused", c.wantStat, before, got)
			} else if c.wantStat == "moe_host.upstream_cx_non_loopback_refused" && got != before+1 {
				t.Fatalf("%s = %d, want %d", c.wantStat, got, before+1)
			}
		})
	}
}
