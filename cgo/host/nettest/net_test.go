// Package nettest drives out/moe-host-netonly (moe-host's network side with a stub connection
// manager that proxies everything to the first cluster) with real HTTP/1.1 traffic: framing in
// both directions, trailers, keep-alive and pool reuse, codec errors, admin, graceful stop.
//
// The host is started through shared/testing/hosttest (Options.Binary "moe-host-netonly", a
// compiled JSON bootstrap; $MOE_NETONLY_BIN replaces the binary). The upstream is the project's
// echo upstream (shared/testing/echo); raw-socket upstreams stand in where a test needs one to
// misbehave.
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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// ---------------------------------------------------------------------------------------------
// Upstream
// ---------------------------------------------------------------------------------------------

// startUpstream is the echo upstream: most paths answer the echo.Echoed JSON of the request
// (what the upstream received: headers, framing, body, trailers), /mirror the body itself.
func startUpstream(t *testing.T) *echo.Server {
	t.Helper()
	return echo.Start(t, "backend")
}

// echoed decodes an echo upstream answer.
func echoed(t *testing.T, body string) echo.Echoed {
	t.Helper()
	var e echo.Echoed
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not an echo upstream answer: %v: %q", err, body)
	}
	return e
}

// ---------------------------------------------------------------------------------------------
// Host process
// ---------------------------------------------------------------------------------------------

type host struct {
	*hosttest.Host
	t *testing.T
}

func (h *host) addr() string        { return h.Addr(h.t, "main") }
func (h *host) adminURL() string    { return h.AdminURL }
func (h *host) url(p string) string { return "http://" + h.addr() + p }

// bootstrapJSON is a compiled bootstrap (cgo/host/compiled-bootstrap.md) whose admin and
// listener ports are the template fields hosttest fills in.
func bootstrapJSON(endpointPort int) map[string]any {
	return map[string]any{
		"admin": map[string]any{"address": "127.0.0.1", "port": "{{.AdminPort}}"},
		"listeners": []any{map[string]any{
			"name":                              "main",
			"address":                           map[string]any{"address": "127.0.0.1", "port": "{{.Ports.main}}"},
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

// bootstrapTemplate is bootstrap as JSON with the port fields as template actions (numbers).
func bootstrapTemplate(t *testing.T, bootstrap map[string]any) string {
	t.Helper()
	js, err := json.Marshal(bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer(`"{{.AdminPort}}"`, `{{.AdminPort}}`, `"{{.Ports.main}}"`, `{{.Ports.main}}`).Replace(string(js))
}

// netonly completes o for moe-host-netonly: no plugin library, a compiled JSON bootstrap, one
// listener "main".
func netonly(o hosttest.Options) hosttest.Options {
	o.Binary = "moe-host-netonly"
	o.Library = hosttest.NoLibrary
	o.ConfigName = "bootstrap.json"
	o.Listeners = []string{"main"}
	return o
}

func startHost(t *testing.T, endpointPort int, opts ...hosttest.Options) *host {
	t.Helper()
	return startHostWith(t, bootstrapJSON(endpointPort), opts...)
}

func startHostWith(t *testing.T, bootstrap map[string]any, opts ...hosttest.Options) *host {
	t.Helper()
	var o hosttest.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	return &host{Host: hosttest.Start(t, bootstrapTemplate(t, bootstrap), nil, netonly(o)), t: t}
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
	h := startHost(t, up.Port)

	t.Run("GetContentLength", func(t *testing.T) {
		resp, err := http.Get(h.url("/hello?x=1"))
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, resp)
		if resp.StatusCode != 200 || resp.ContentLength != int64(len(body)) {
			t.Fatalf("got %d, content-length %d for %d bytes", resp.StatusCode, resp.ContentLength, len(body))
		}
		if e := echoed(t, body); e.Method != "GET" || e.URI != "/hello?x=1" || e.Header("User-Agent") == "" {
			t.Fatalf("upstream saw %s %s user-agent %q", e.Method, e.URI, e.Header("User-Agent"))
		}
	})

	t.Run("PostContentLengthBothWays", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: example.com\r\nContent-Length: 11\r\n\r\nhello world")
		resp := readResponse(t, br, "POST")
		body := readBody(t, resp)
		if resp.StatusCode != 200 || resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) != 0 {
			t.Fatalf("got %d cl=%d te=%v for %d bytes", resp.StatusCode, resp.ContentLength, resp.TransferEncoding, len(body))
		}
		e := echoed(t, body)
		if e.Body != "hello world" || e.Header("Content-Length") != "11" {
			t.Fatalf("upstream saw body %q content-length %q", e.Body, e.Header("Content-Length"))
		}
		if e.Host != "example.com" {
			t.Fatalf("upstream saw host %q", e.Host)
		}
		if len(e.TransferEncoding) != 0 {
			t.Fatalf("upstream saw transfer-encoding %v for a content-length request", e.TransferEncoding)
		}
	})

	// A header whose name only begins with "transfer-encoding" is an ordinary header (Envoy's
	// codec matches whole names; fuzz finding: the system http_parser took it for
	// Transfer-Encoding, answering 501 alone and 400 next to a Content-Length).
	t.Run("HeaderNamedLikeTransferEncoding", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding-X: y\r\nContent-Length: 5\r\n\r\nhello")
		resp := readResponse(t, br, "POST")
		body := readBody(t, resp)
		if resp.StatusCode != 200 {
			t.Fatalf("with content-length: got %d %q", resp.StatusCode, body)
		}
		if e := echoed(t, body); e.Body != "hello" || e.Header("Transfer-Encoding-X") != "y" {
			t.Fatalf("upstream saw body %q transfer-encoding-x %q", e.Body, e.Header("Transfer-Encoding-X"))
		}
		io.WriteString(c, "GET /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encodingt: hunked\r\n\r\n")
		resp = readResponse(t, br, "GET")
		body = readBody(t, resp)
		if resp.StatusCode != 200 {
			t.Fatalf("alone: got %d %q", resp.StatusCode, body)
		}
		if e := echoed(t, body); e.Header("Transfer-Encodingt") != "hunked" {
			t.Fatalf("upstream saw transfer-encodingt %q", e.Header("Transfer-Encodingt"))
		}
	})

	t.Run("PostChunkedBothWays", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST /echo?chunked=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"+
			"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
		resp := readResponse(t, br, "POST")
		if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
			t.Fatalf("response not chunked: %v cl=%d", resp.TransferEncoding, resp.ContentLength)
		}
		e := echoed(t, readBody(t, resp))
		if e.Body != "hello world" {
			t.Fatalf("upstream saw body %q", e.Body)
		}
		if te := e.TransferEncoding; len(te) != 1 || te[0] != "chunked" {
			t.Fatalf("upstream saw transfer-encoding %v, want chunked", te)
		}
	})

	t.Run("RequestTrailers", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTrailer: x-req-trailer\r\n\r\n"+
			"3\r\nabc\r\n0\r\nx-req-trailer: tv\r\n\r\n")
		resp := readResponse(t, br, "POST")
		if e := echoed(t, readBody(t, resp)); e.Body != "abc" || e.Trailer("x-req-trailer") != "tv" {
			t.Fatalf("upstream saw body %q trailers %v", e.Body, e.Trailers)
		}
	})

	t.Run("ResponseTrailers", func(t *testing.T) {
		resp, err := http.Get(h.url("/chunked?body=body-with-trailers&trailer=X-Trailer-A:alpha&trailer=X-Trailer-B:beta"))
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
				req, _ = http.NewRequest("POST", h.url("/mirror?chunked=1"), pr)
			} else {
				req, _ = http.NewRequest("POST", h.url("/mirror"), bytes.NewReader(payload))
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
			if e := echoed(t, readBody(t, resp)); e.URI != fmt.Sprintf("/ka%d", i) {
				t.Fatalf("request %d: upstream saw %q", i, e.URI)
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
		for _, want := range []string{"GET /p1 ", "POST /echo xyz", "GET /p3 "} {
			resp := readResponse(t, br, "GET")
			if e := echoed(t, readBody(t, resp)); e.Method+" "+e.URI+" "+e.Body != want {
				t.Fatalf("upstream saw %q, want %q", e.Method+" "+e.URI+" "+e.Body, want)
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
		if e := echoed(t, readBody(t, resp)); e.URI != "/after-head" {
			t.Fatalf("after HEAD: upstream saw %q", e.URI)
		}
	})

	t.Run("AbsoluteFormTarget", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		io.WriteString(c, "GET http://abs.example:81/echo?q=1 HTTP/1.1\r\nHost: other\r\n\r\n")
		resp := readResponse(t, br, "GET")
		if e := echoed(t, readBody(t, resp)); resp.StatusCode != 200 || e.Host != "abs.example:81" || e.URI != "/echo?q=1" {
			t.Fatalf("status %d, upstream saw host %q target %q", resp.StatusCode, e.Host, e.URI)
		}
	})

	t.Run("DownstreamCloseResetsUpstream", func(t *testing.T) {
		before := up.Abandoned.Load()
		c, err := net.Dial("tcp", h.addr())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET /delay/5000 HTTP/1.1\r\nHost: h\r\n\r\n")
		time.Sleep(200 * time.Millisecond)
		c.Close()
		if !tb.Poll(3*time.Second, func() bool { return up.Abandoned.Load() != before }) {
			t.Fatalf("upstream request not reset after the client went away")
		}
	})

	t.Run("ConnectionClose", func(t *testing.T) {
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "GET /bye HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
		resp := readResponse(t, br, "GET")
		e := echoed(t, readBody(t, resp))
		if e.URI != "/bye" {
			t.Fatalf("upstream saw %q", e.URI)
		}
		if !resp.Close {
			t.Fatalf("response lacks connection: close: %v", resp.Header)
		}
		expectClosed(t, c, br)
		if e.Header("Connection") != "" {
			t.Fatalf("hop-by-hop connection header forwarded upstream: %v", e.Headers)
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
		for stray == up.Port {
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

// closedPort is a loopback port that refuses connections for the whole test.
func closedPort(t *testing.T) int { return hosttest.ClosedPort(t) }

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
	h := startHost(t, up.Port, hosttest.Options{Args: []string{"--drain-time-s", "5"}})
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
		io.WriteString(c, "GET /delay/1500?body=slow+done HTTP/1.1\r\nHost: h\r\n\r\n")
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
	if err := h.Signal(syscall.SIGTERM); err != nil {
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
	if err := h.WaitExit(t, 5*time.Second); err != nil {
		t.Fatalf("moe-host exit: %v", err)
	}
	if time.Since(start) > 4*time.Second {
		t.Fatalf("exit took %v; it should follow the last stream, not the drain time", time.Since(start))
	}
}

func TestQuitQuitQuit(t *testing.T) {
	up := startUpstream(t)
	h := startHost(t, up.Port)
	resp, err := http.Post(h.adminURL()+"/quitquitquit", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if err := h.WaitExit(t, 5*time.Second); err != nil {
		t.Fatalf("exit after /quitquitquit: %v", err)
	}
}

func TestCommandLine(t *testing.T) {
	// Unknown flags are refused before the config is read.
	out := hosttest.StartExpectFailure(t, bootstrapTemplate(t, bootstrapJSON(80)), nil,
		netonly(hosttest.Options{Args: []string{"--no-such-flag"}, WantExitCode: 1}))
	if !strings.Contains(out, "--no-such-flag") {
		t.Fatalf("unknown flag: out=%s", out)
	}
	// Envoy's ignored flags are accepted; the bad config is what fails.
	out = hosttest.StartExpectFailure(t, `{"listeners":[{"name":"x"}]}`, nil,
		netonly(hosttest.Options{Args: []string{"--base-id", "3", "--disable-hot-restart"}, WantExitCode: 1}))
	if !strings.Contains(out, "$.listeners[0].address") {
		t.Fatalf("bad config: out=%s", out)
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
		h := startHost(t, port, hosttest.Options{Concurrency: 1})
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

	// The same for responses (fuzz finding): the Content-Length frames the body and the
	// connection is reused.
	t.Run("HeaderNamedLikeTransferEncoding", func(t *testing.T) {
		port, _ := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
			for {
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding-X: y\r\nContent-Length: 3\r\n\r\nabc")
			}
		})
		h := startHost(t, port, hosttest.Options{Concurrency: 1})
		c := dial(t, h.addr())
		br := bufio.NewReader(c)
		for i := 0; i < 2; i++ {
			io.WriteString(c, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n")
			resp := readResponse(t, br, "GET")
			if body := readBody(t, resp); resp.StatusCode != 200 || body != "abc" || resp.Header.Get("Transfer-Encoding-X") != "y" {
				t.Fatalf("response %d: got %d %q %v", i, resp.StatusCode, body, resp.Header)
			}
		}
		if reuse := h.stat(t, "moe_host.upstream_cx_reuse"); reuse != 1 {
			t.Fatalf("upstream_cx_reuse %d, want 1", reuse)
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
		h := startHost(t, port, hosttest.Options{Concurrency: 1})
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
	h := startHost(t, up.Port)
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
	e := echoed(t, readBody(t, resp))
	if e.Body != "body" {
		t.Fatalf("upstream saw body %q", e.Body)
	}
	if got := e.Header("Expect"); got != "" {
		t.Fatalf("expect forwarded upstream: %q", got)
	}
}

func TestStrictDNS(t *testing.T) {
	up := startUpstream(t)
	cfg := bootstrapJSON(up.Port)
	cluster := cfg["clusters"].([]any)[0].(map[string]any)
	cluster["type"] = "STRICT_DNS"
	cluster["dns_refresh_rate_ms"] = 200
	cluster["endpoints"] = []any{map[string]any{"address": "localhost", "port": up.Port}}
	h := startHostWith(t, cfg)
	for i := 0; i < 3; i++ {
		resp, err := http.Get(h.url("/dns"))
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(t, resp); resp.StatusCode != 200 || echoed(t, body).URI != "/dns" {
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
	h := startHost(t, up.Port)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				body := strings.Repeat(fmt.Sprintf("g%di%d-", g, i), 1+i*50)
				path := "/mirror"
				if i%3 == 0 {
					path += "?chunked=1" // the answer streamed back chunked
				}
				req, _ := http.NewRequest("POST", h.url(path), strings.NewReader(body))
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
// 0.0.0.0 is outside 127.0.0.0/8, so the guard must refuse it, but a connect to it stays on the
// machine even if the guard failed (Linux sends it to the local host).
func TestLoopbackGuard(t *testing.T) {
	cases := []struct {
		name, kind, address string
		wantBody, wantStat  string
	}{
		{"Static", "STATIC", "0.0.0.0", "immediate connect error: 1|remote address:0.0.0.0:80", "moe_host.upstream_cx_non_loopback_refused"},
		{"StrictDnsNumeric", "STRICT_DNS", "0.0.0.0", "immediate connect error: 1|remote address:0.0.0.0:80", "moe_host.upstream_cx_non_loopback_refused"},
		{"StrictDnsName", "STRICT_DNS", "upstream.invalid", "no healthy upstream", "moe_host.upstream_dns_non_local_refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := bootstrapJSON(80)
			cluster := cfg["clusters"].([]any)[0].(map[string]any)
			cluster["type"] = c.kind
			cluster["endpoints"] = []any{map[string]any{"address": c.address, "port": 80}}
			h := startHostWith(t, cfg, hosttest.Options{AllowNonLoopback: true}) // refusals on purpose
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

// TestChunkedRequestFraming: the chunked request body is read with the rules of Envoy 1.39's
// HTTP/1 codec, quiche's BalsaFrame under the policy of balsa_parser.cc (see
// cgo/host/chunked_decoder.h). Each body is followed by a pipelined GET /next on the same
// connection: a refused body is answered 400 (431 for oversized trailers) and the connection
// closes, so the bytes after it are never taken as a request; an accepted one delivers exactly
// the chunk data and then the next request.
func TestChunkedRequestFraming(t *testing.T) {
	up := startUpstream(t)
	h := startHost(t, up.Port)
	const head = "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
	const next = "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"
	refused := []struct {
		name, body string
		status     int
	}{
		// RFC 9112 7.1.1 wants CRLF after the extensions: a bare LF must not end the line, or
		// "xx" below is chunk data to a peer that ends the line there and an extension to one
		// that does not (http_parser 2.9.4 took the latter view).
		{"BareLFEndsExtension", "2;\nxx\r\nyy\r\n0\r\n\r\n", 400},
		{"BareLFInQuotedExtension", "2;a=\"x\ny\"\r\nxx\r\n0\r\n\r\n", 400},
		{"BareLFAfterSize", "2\nxx\r\n0\r\n\r\n", 400},
		{"BareLFAfterLastChunkSize", "2\r\nxx\r\n0\n\r\n", 400},
		{"LoneCRInExtension", "2;a\rb\r\nxx\r\n0\r\n\r\n", 400},
		{"LeadingSpace", " 2\r\nxx\r\n0\r\n\r\n", 400},
		{"LeadingTab", "\t2\r\nxx\r\n0\r\n\r\n", 400},
		{"HexPrefix", "0x2\r\nxx\r\n0\r\n\r\n", 400},
		{"Sign", "+2\r\nxx\r\n0\r\n\r\n", 400},
		{"EmptySize", "\r\nxx\r\n0\r\n\r\n", 400},
		{"SizeOverflows64Bits", "10000000000000000\r\nxx\r\n0\r\n\r\n", 400},
		{"TrailerWithoutColon", "2\r\nxx\r\n0\r\nno colon here\r\n\r\n", 400},
		{"TrailerNameNotAToken", "2\r\nxx\r\n0\r\nx t: v\r\n\r\n", 400},
		{"TrailersOverTheHeaderLimit", "2\r\nxx\r\n0\r\nx-big: " + strings.Repeat("a", 61*1024) + "\r\n\r\n", 431},
	}
	for _, tc := range refused {
		t.Run("Refused/"+tc.name, func(t *testing.T) {
			c := dial(t, h.addr())
			br := bufio.NewReader(c)
			io.WriteString(c, head+tc.body+next)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no response: %v", err)
			}
			body := readBody(t, resp)
			if resp.StatusCode != tc.status || !resp.Close {
				t.Fatalf("status %d (close %v) %q, want %d and connection: close", resp.StatusCode, resp.Close, body, tc.status)
			}
			expectClosed(t, c, br)
		})
	}
	accepted := []struct {
		name, body, want string
		trailer          [2]string
	}{
		// BWS and extensions after the size are allowed (Balsa's kDelimiter: SP, HTAB, ';').
		{"TrailingSpace", "2 \r\nxx\r\n0\r\n\r\n", "xx", [2]string{}},
		{"TrailingTab", "2\t\r\nxx\r\n0\r\n\r\n", "xx", [2]string{}},
		{"SpaceBeforeExtension", "2 ;a=b\r\nxx\r\n0\r\n\r\n", "xx", [2]string{}},
		{"QuotedExtension", "2;a=\"x;y\"\r\nxx\r\n0\r\n\r\n", "xx", [2]string{}},
		{"LeadingZeros", "00000000000000000002\r\nxx\r\n0\r\n\r\n", "xx", [2]string{}},
		{"UpperCaseHex", "A\r\n0123456789\r\n0\r\n\r\n", "0123456789", [2]string{}},
		// Without envoy.reloadable_features.strict_chunk_parsing (off in 1.39) Balsa skips to
		// the LF after the chunk data.
		{"StrayBytesAfterData", "2\r\nxxYY\r\n0\r\n\r\n", "xx", [2]string{}},
		{"BareLFAfterData", "2\r\nxx\n0\r\n\r\n", "xx", [2]string{}},
		{"BodyEndsWithBareLF", "2\r\nxx\r\n0\r\n\n", "xx", [2]string{}},
		{"FoldedTrailer", "2\r\nxx\r\n0\r\nx-t: a\r\n b\r\n\r\n", "xx", [2]string{"x-t", "a b"}},
		{"TrailerLineEndsWithBareLF", "2\r\nxx\r\n0\r\nx-t: v\n\r\n", "xx", [2]string{"x-t", "v"}},
	}
	for _, tc := range accepted {
		t.Run("Accepted/"+tc.name, func(t *testing.T) {
			c := dial(t, h.addr())
			br := bufio.NewReader(c)
			io.WriteString(c, head+tc.body+next)
			resp := readResponse(t, br, "POST")
			body := readBody(t, resp)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d %q", resp.StatusCode, body)
			}
			e := echoed(t, body)
			if e.Body != tc.want {
				t.Fatalf("upstream saw body %q, want %q", e.Body, tc.want)
			}
			if tc.trailer[0] != "" && e.Trailer(tc.trailer[0]) != tc.trailer[1] {
				t.Fatalf("upstream saw trailers %v, want %s: %q", e.Trailers, tc.trailer[0], tc.trailer[1])
			}
			resp = readResponse(t, br, "GET")
			if e := echoed(t, readBody(t, resp)); e.URI != "/next" {
				t.Fatalf("the pipelined request after the body: upstream saw %q", e.URI)
			}
		})
	}
}
