package conformance

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// scriptedUpstream is a raw-socket upstream: it reads each request with net/http's parser and
// writes whatever answer(path) returns, byte for byte (a Go http.Server could not send most of
// what these tests need). close: it closes the connection after the answer.
type scriptedUpstream struct {
	Port int
	mu   sync.Mutex
	seen []string // request paths, in order
}

func startScripted(t testing.TB, answer func(path string) (raw string, close bool)) *scriptedUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	u := &scriptedUpstream{Port: ln.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					u.mu.Lock()
					u.seen = append(u.seen, r.URL.Path)
					u.mu.Unlock()
					raw, closeAfter := answer(r.URL.Path)
					if _, err := c.Write([]byte(raw)); err != nil || closeAfter {
						return
					}
				}
			}()
		}
	}()
	return u
}

// hardeningListeners are the listeners of testdata/hardening.yaml.tmpl.
var hardeningListeners = []string{"main", "hdrto", "idleto", "rqto", "flow", "flowgo"}

// startHardening starts the hardening host with raw as the scripted upstream's port (the
// stall cluster points at a closed port).
func startHardening(t testing.TB, raw int) *hostProc {
	t.Helper()
	return startHardeningWith(t, raw, freePort(t))
}

func startHardeningWith(t testing.TB, raw, stall int) *hostProc {
	t.Helper()
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	return startHost(t, hostSpec{tmpl: "hardening", listeners: hardeningListeners,
		data: map[string]any{"A1": a1.Port, "Raw": raw, "Stall": stall}})
}

// TestUpstreamProtocolErrors: responses Envoy's HTTP/1 client codec refuses end the upstream
// request as a protocol error: the connection is closed and counted in
// cluster.<name>.upstream_cx_protocol_error (codec_client.cc:190-203), the stream is reset with
// ProtocolError, and the router answers 502 with the UPE flag (router.cc:1681-1712). What it
// accepts passes through unchanged (the "Accepted" cases, which pin Envoy's leniency).
func TestUpstreamProtocolErrors(t *testing.T) {
	manyHeaders := strings.Repeat("x-h: v\r\n", 101)
	bigBlock := "x-big: " + strings.Repeat("b", 81*1024) + "\r\n"
	fine := "x-big: " + strings.Repeat("b", 70*1024) + "\r\n"
	answers := map[string]string{
		// codec_impl.cc:1542-1558
		"/raw/204-content-length": "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello",
		"/raw/204-te":             "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"/raw/101-te":             "HTTP/1.1 101 Switching Protocols\r\nTransfer-Encoding: chunked\r\n\r\n",
		"/raw/100-content-length": "HTTP/1.1 100 Continue\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		// codec_impl.cc:915-937
		"/raw/te-identity":    "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nuntil close",
		"/raw/te-gzip":        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx",
		"/raw/te-and-cl":      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\nxx\r\n0\r\n\r\n",
		"/raw/te-twice":       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxx\r\n0\r\n\r\n",
		"/raw/cl-twice":       "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nxx",
		"/raw/cl-not-numeric": "HTTP/1.1 200 OK\r\nContent-Length: 0x2\r\n\r\nxx",
		// max_headers_count (100) and MAX_RESPONSE_HEADERS_KB (80) of the cluster
		"/raw/101-headers": "HTTP/1.1 200 OK\r\n" + manyHeaders + "Content-Length: 0\r\n\r\n",
		"/raw/81k-headers": "HTTP/1.1 200 OK\r\n" + bigBlock + "Content-Length: 0\r\n\r\n",
		"/raw/header-name": "HTTP/1.1 200 OK\r\nbad name: v\r\nContent-Length: 0\r\n\r\n",
		// A status below 200 with a body framing header is refused like a 1xx (Balsa's policy
		// leaves disallow_invalid_response_codes off; codec_impl.cc:1542 compares < 200).
		"/raw/status-000": "HTTP/1.1 000 Zero\r\nContent-Length: 2\r\n\r\nok",
		"/raw/status-099": "HTTP/1.1 099 Low\r\nContent-Length: 2\r\n\r\nok",
		// Balsa's chunk framing (chunked_decoder.h): found after the headers went down.
		"/raw/chunk-bare-lf":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;\nxx\r\nyy\r\n0\r\n\r\n",
		"/raw/chunk-hexprefix": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\nxx\r\n0\r\n\r\n",

		// Accepted by Envoy.
		"/raw/204-cl0":        "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
		"/raw/70k-headers":    "HTTP/1.1 200 OK\r\n" + fine + "Content-Length: 2\r\n\r\nok",
		"/raw/100-headers":    "HTTP/1.1 200 OK\r\n" + strings.Repeat("x-h: v\r\n", 99) + "Content-Length: 2\r\n\r\nok",
		"/raw/304-cl":         "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
		"/raw/chunk-bws":      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 ;a=b\r\nok\r\n0\r\n\r\n",
		"/raw/status-000-eof": "HTTP/1.1 000 Zero\r\nConnection: close\r\n\r\nok",
		"/raw/101-on-a-get":   "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n",
	}
	up := startScripted(t, func(path string) (string, bool) {
		raw, ok := answers[path]
		if !ok {
			return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", false
		}
		// The host closes a connection it refused; a body read until close needs the close.
		return raw, strings.HasSuffix(path, "-eof")
	})
	h := startHardening(t, up.Port)
	const body502 = "upstream connect error or disconnect/reset before headers. reset reason: protocol error"
	props := hdrs("x-test-basic", "1", "x-test-properties", "response.flags,response.code_details")
	upeBit := "8388608" // CoreResponseFlag UpstreamProtocolError = 23
	for _, name := range []string{"204-content-length", "204-te", "101-te", "100-content-length", "te-identity",
		"te-gzip", "te-and-cl", "te-twice", "cl-twice", "cl-not-numeric", "101-headers", "81k-headers",
		"header-name", "status-000", "status-099"} {
		t.Run("Refused/"+name, func(t *testing.T) {
			before := h.stats(t)
			r := h.must(t, req{listener: "main", path: "/raw/" + name, headers: props})
			if r.status != 502 || r.body != body502 {
				t.Fatalf("got %d %q, want 502 %q", r.status, r.body, body502)
			}
			if f := r.get("x-prop-response.flags"); f != upeBit {
				t.Errorf("response.flags = %q, want %s (UPE)", f, upeBit)
			}
			if d := r.get("x-prop-response.code_details"); d != "upstream_reset_before_response_started{protocol_error}" {
				t.Errorf("response.code_details = %q", d)
			}
			after := h.stats(t)
			if d := after["cluster.raw.upstream_cx_protocol_error"] - before["cluster.raw.upstream_cx_protocol_error"]; d != 1 {
				t.Errorf("cluster.raw.upstream_cx_protocol_error grew by %d, want 1", d)
			}
			if d := after["http.main.downstream_rq_5xx"] - before["http.main.downstream_rq_5xx"]; d != 1 {
				t.Errorf("http.main.downstream_rq_5xx grew by %d, want 1", d)
			}
		})
	}
	// Framing errors in the body come after the response headers went downstream: the client
	// sees the response cut (router.cc onUpstreamAbort resets a started response).
	for _, name := range []string{"chunk-bare-lf", "chunk-hexprefix"} {
		t.Run("RefusedAfterHeaders/"+name, func(t *testing.T) {
			before := h.stats(t)
			// A raw connection: net/http would retry a GET whose reused connection closed
			// before the response, and the retry would count a second error.
			rc := h.dial(t, "main")
			rc.write("GET /raw/" + name + " HTTP/1.1\r\nHost: test.com\r\n\r\n")
			if res, body, err := rc.readResponse("GET"); err == nil {
				t.Fatalf("got a complete response %d %q, want it cut", res.StatusCode, body)
			}
			if !rc.closedByPeer(5 * time.Second) {
				t.Errorf("the downstream connection stayed open after the cut response")
			}
			after := h.stats(t)
			if d := after["cluster.raw.upstream_cx_protocol_error"] - before["cluster.raw.upstream_cx_protocol_error"]; d != 1 {
				t.Errorf("cluster.raw.upstream_cx_protocol_error grew by %d, want 1", d)
			}
		})
	}
	accepted := []struct {
		name, body string
		status     int
	}{
		{"204-cl0", "", 204},
		{"70k-headers", "ok", 200},
		{"100-headers", "ok", 200},
		{"304-cl", "", 304},
		{"chunk-bws", "ok", 200},
		// Without framing headers nothing checks the range (disallow_invalid_response_codes is
		// off): the code goes down as parsed, "HTTP/1.1 0 Unknown", the body read until close.
		{"status-000-eof", "ok", 0},
		// A 101 to a request that asked for no upgrade is a bodiless final response to Envoy
		// (cannotHaveBody; the codec only switches protocols for an upgrade request), and the
		// connection/upgrade headers go (mutateResponseHeaders).
		{"101-on-a-get", "", 101},
	}
	for _, tc := range accepted {
		t.Run("Accepted/"+tc.name, func(t *testing.T) {
			rc := h.dial(t, "main")
			rc.write("GET /raw/" + tc.name + " HTTP/1.1\r\nHost: test.com\r\n\r\n")
			rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			// Read by hand: net/http refuses a status that is not three digits.
			tp := textproto.NewReader(rc.r)
			line, err := tp.ReadLine()
			if err != nil {
				t.Fatalf("no response: %v", err)
			}
			if want := "HTTP/1.1 " + strconv.Itoa(tc.status) + " "; !strings.HasPrefix(line, want) {
				t.Fatalf("status line %q, want %q...", line, want)
			}
			hdr, err := tp.ReadMIMEHeader()
			if err != nil {
				t.Fatalf("headers: %v", err)
			}
			if tc.status == 101 && (hdr.Get("Connection") != "" || hdr.Get("Upgrade") != "") {
				t.Errorf("101 to a plain GET kept connection/upgrade headers: %v", hdr)
			}
			var b []byte
			cl := hdr.Get("Content-Length")
			switch {
			case hdr.Get("Transfer-Encoding") == "chunked":
				if b, err = io.ReadAll(httputil.NewChunkedReader(rc.r)); err == nil {
					_, err = tp.ReadMIMEHeader() // the trailer section and its blank line
				}
			case cl != "" && tc.status >= 200 && tc.status != 204 && tc.status != 304:
				n, _ := strconv.Atoi(cl)
				b = make([]byte, n)
				_, err = io.ReadFull(rc.r, b)
			case cl != "" && cl != "0" && tc.status != 304:
				t.Errorf("content-length %q on a %d", cl, tc.status)
			}
			if err != nil {
				t.Fatalf("body: %v", err)
			}
			if string(b) != tc.body {
				t.Errorf("body %q, want %q", b, tc.body)
			}
			if tc.status == 0 {
				return // the upstream closed: so does the host
			}
			// The connection still serves HTTP/1.1 (Envoy switched nothing).
			rc.write("GET /echo HTTP/1.1\r\nHost: test.com\r\n\r\n")
			if res, _, err := rc.readResponse("GET"); err != nil || res.StatusCode != 200 {
				t.Errorf("the next request on the connection: %v %v", res, err)
			}
		})
	}
}

// TestSlowRequestHeaders: the stream starts with the request's first byte (Envoy's codec calls
// newStream from onMessageBegin), so headers sent a byte at a time are timed out by
// request_headers_timeout, stream_idle_timeout and request_timeout alike
// (conn_manager_impl.cc:968-989, onIdleTimeout/onRequestTimeout/onRequestHeaderTimeout): a 408
// local reply with no filter run (the chain is created with the headers), and the connection
// closes. A keep-alive connection with no byte of a next request has no stream to time out.
func TestSlowRequestHeaders(t *testing.T) {
	h := startHardening(t, freePort(t))
	cases := []struct{ listener, body, counter string }{
		{"hdrto", "request header timeout", "http.hdrto.downstream_rq_header_timeout"},
		{"idleto", "stream timeout", "http.idleto.downstream_rq_idle_timeout"},
		{"rqto", "request timeout", "http.rqto.downstream_rq_timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.listener, func(t *testing.T) {
			before := h.stats(t)
			rc := h.dial(t, tc.listener)
			// One request that would never complete: a byte every 100 ms, at most 50 (5 s),
			// while reading for the answer in between.
			const line = "GET /echo HTTP/1.1\r\nHost: test.com\r\nx-slow: "
			start := time.Now()
			got := make(chan error, 1)
			var res *http.Response
			var body string
			go func() {
				var err error
				res, body, err = rc.readResponse("GET")
				got <- err
			}()
			var err error
		send:
			for i := 0; i < 50; i++ {
				select {
				case err = <-got:
					break send
				case <-time.After(100 * time.Millisecond):
				}
				b := "a"
				if i < len(line) {
					b = line[i : i+1]
				}
				rc.c.SetWriteDeadline(time.Now().Add(time.Second))
				if _, werr := rc.c.Write([]byte(b)); werr != nil {
					err = <-got
					break
				}
			}
			if err == nil && res == nil {
				err = <-got
			}
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("no response after %v: %v", elapsed, err)
			}
			if res.StatusCode != 408 || body != tc.body {
				t.Fatalf("got %d %q, want 408 %q", res.StatusCode, body, tc.body)
			}
			// The timers run from the first byte: 400 ms, not 400 ms after the headers.
			if elapsed < 300*time.Millisecond || elapsed > 3*time.Second {
				t.Errorf("answered after %v, want about 400ms", elapsed)
			}
			if !res.Close {
				t.Errorf("the 408 does not say connection: close")
			}
			if !rc.closedByPeer(3 * time.Second) {
				t.Errorf("the connection stayed open after the 408")
			}
			after := h.stats(t)
			if d := after[tc.counter] - before[tc.counter]; d != 1 {
				t.Errorf("%s grew by %d, want 1", tc.counter, d)
			}
			if d := after["http."+tc.listener+".downstream_rq_4xx"] - before["http."+tc.listener+".downstream_rq_4xx"]; d != 1 {
				t.Errorf("downstream_rq_4xx grew by %d, want 1", d)
			}
			// No filter was created: Go saw neither headers nor a log/destroy of this stream.
			for _, c := range []string{"moe_host.go.on_http_header", "moe_host.go.on_http_log", "moe_host.go.on_http_destroy"} {
				if d := after[c] - before[c]; d != 0 {
					t.Errorf("%s grew by %d, want 0 (no filter before the headers)", c, d)
				}
			}
		})
	}
	// Idle between requests is no stream: waiting longer than every timeout, then sending the
	// next request on the same connection, works.
	for _, l := range []string{"hdrto", "idleto", "rqto"} {
		t.Run("KeepAliveIdle/"+l, func(t *testing.T) {
			rc := h.dial(t, l)
			rc.write("GET /echo HTTP/1.1\r\nHost: test.com\r\n\r\n")
			if res, _, err := rc.readResponse("GET"); err != nil || res.StatusCode != 200 {
				t.Fatalf("first request: %v %v", res, err)
			}
			time.Sleep(700 * time.Millisecond)
			rc.write("GET /echo HTTP/1.1\r\nHost: test.com\r\n\r\n")
			if res, _, err := rc.readResponse("GET"); err != nil || res.StatusCode != 200 {
				t.Fatalf("request after an idle keep-alive: %v %v", res, err)
			}
		})
	}
	// Headers in time: the header timer stops with them, a slow body is not its business.
	t.Run("HeadersInTimeSlowBody", func(t *testing.T) {
		rc := h.dial(t, "hdrto")
		rc.write("POST /echo HTTP/1.1\r\nHost: test.com\r\ncontent-length: 2\r\n\r\n")
		time.Sleep(700 * time.Millisecond)
		rc.write("ok")
		if res, _, err := rc.readResponse("POST"); err != nil || res.StatusCode != 200 {
			t.Fatalf("slow body after timely headers: %v %v", res, err)
		}
	})
}

// TestSignals: SIGHUP is eaten with a warning and SIGUSR1 reopens the access logs (server.cc:
// 1016-1023); neither stops the host nor resets a request in flight. (Their default action,
// which the host had, kills the process.)
func TestSignals(t *testing.T) {
	h := startHardening(t, freePort(t))
	rc := h.dial(t, "main")
	rc.write("POST /echo HTTP/1.1\r\nHost: test.com\r\ncontent-length: 2\r\n\r\no")
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGHUP} {
		if err := h.Signal(sig); err != nil {
			t.Fatalf("signal %v: %v", sig, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rc.write("k")
	res, body, err := rc.readResponse("POST")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("the request in flight across the signals: %v %v", res, err)
	}
	if !strings.Contains(body, "ok") {
		t.Errorf("echoed body %q lacks the request body", body)
	}
	h.alive(t)
	if r := h.must(t, req{listener: "main", path: "/echo"}); r.status != 200 {
		t.Errorf("a request after the signals: %d", r.status)
	}
	var hup, usr1 int
	if !tb.Poll(5*time.Second, func() bool {
		out := h.Output()
		hup = strings.Count(out, "caught and eating SIGHUP. See documentation for how to hot restart.")
		usr1 = strings.Count(out, "caught SIGUSR1. Reopening access logs.")
		return hup == 2 && usr1 == 1
	}) {
		t.Fatalf("log lines: %d SIGHUP (want 2), %d SIGUSR1 (want 1)", hup, usr1)
	}
}

// rawExchange writes raw on a new connection to listener and reads one response.
func rawExchange(t *testing.T, h *hostProc, listener, method, raw string) (*rawConn, *http.Response, string) {
	t.Helper()
	rc := h.dial(t, listener)
	rc.write(raw)
	res, body, err := rc.readResponse(method)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	return rc, res, body
}

// TestRequestTargetsAndUpgrades: what Envoy's HTTP/1 codec and connection manager do with
// repeated Host, CONNECT and Upgrade requests.
func TestRequestTargetsAndUpgrades(t *testing.T) {
	up := startScripted(t, func(path string) (string, bool) {
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
	})
	h := startHardening(t, up.Port)
	seen := func() []string {
		up.mu.Lock()
		defer up.mu.Unlock()
		return append([]string(nil), up.seen...)
	}

	// Host is Envoy's inline :authority: a second field is appended with ',' (header_map_impl.cc
	// insertByKey), which authorityIsValid accepts; the upstream gets both, not the first.
	t.Run("TwoHostHeaders", func(t *testing.T) {
		_, res, body := rawExchange(t, h, "main", "GET", "GET /echo HTTP/1.1\r\nHost: test.com\r\nHost: other.com\r\n\r\n")
		if res.StatusCode != 200 {
			t.Fatalf("status %d %q", res.StatusCode, body)
		}
		rep := echoOf(t, body)
		if rep.Host != "test.com,other.com" {
			t.Errorf("upstream host %q, want %q", rep.Host, "test.com,other.com")
		}
	})

	// CONNECT takes the authority form only (codec_impl.cc handlePath, Url::initialize with
	// is_connect): anything else is a 400 and the connection closes.
	for name, raw := range map[string]string{
		"OriginForm":    "CONNECT /raw/connect HTTP/1.1\r\nHost: test.com\r\n\r\n",
		"AbsoluteForm":  "CONNECT http://test.com/raw/connect HTTP/1.1\r\nHost: test.com\r\n\r\n",
		"NoPort":        "CONNECT test.com HTTP/1.1\r\nHost: test.com\r\n\r\n",
		"ContentLength": "CONNECT test.com:443 HTTP/1.1\r\nHost: test.com:443\r\nContent-Length: 4\r\n\r\nabcd",
	} {
		t.Run("Connect/"+name, func(t *testing.T) {
			before := len(seen())
			rc, res, _ := rawExchange(t, h, "main", "CONNECT", raw)
			if res.StatusCode != 400 {
				t.Fatalf("status %d, want 400", res.StatusCode)
			}
			if !rc.closedByPeer(3 * time.Second) {
				t.Errorf("connection left open")
			}
			if n := len(seen()); n != before {
				t.Errorf("the upstream got %v", seen()[before:])
			}
		})
	}
	// An authority-form CONNECT has no :path: only a connect_matcher route could take it
	// (config_impl.cc:1823), so the router answers 404; the bytes after it are tunnel payload,
	// never a request, and the connection closes (the request never completes).
	t.Run("Connect/AuthorityFormNoRoute", func(t *testing.T) {
		before := len(seen())
		rc, res, _ := rawExchange(t, h, "main", "CONNECT",
			"CONNECT test.com:443 HTTP/1.1\r\nHost: test.com:443\r\n\r\nGET /raw/smuggled HTTP/1.1\r\nHost: test.com\r\n\r\n")
		if res.StatusCode != 404 {
			t.Fatalf("status %d, want 404", res.StatusCode)
		}
		if !rc.closedByPeer(3 * time.Second) {
			t.Errorf("connection left open")
		}
		time.Sleep(100 * time.Millisecond)
		if n := len(seen()); n != before {
			t.Errorf("the upstream got %v", seen()[before:])
		}
	})

	// An upgrade on a route without upgrade_configs: 403 with an empty body before any filter
	// decodes it, and the connection closes after it (conn_manager_impl.cc:1575-1590), so
	// what follows the headers is never parsed as a request.
	for name, conn := range map[string]string{"Upgrade": "Upgrade", "KeepAliveUpgrade": "keep-alive, upgrade"} {
		t.Run("Upgrade/"+name, func(t *testing.T) {
			before := h.stats(t)
			seenBefore := len(seen())
			rc, res, body := rawExchange(t, h, "main", "GET",
				"GET /raw/ws HTTP/1.1\r\nHost: test.com\r\nConnection: "+conn+"\r\nUpgrade: websocket\r\n\r\n"+
					"GET /raw/smuggled HTTP/1.1\r\nHost: test.com\r\n\r\n")
			if res.StatusCode != 403 || body != "" {
				t.Fatalf("got %d %q, want 403 and no body", res.StatusCode, body)
			}
			if !res.Close {
				t.Errorf("the 403 does not say connection: close")
			}
			if !rc.closedByPeer(3 * time.Second) {
				t.Errorf("connection left open")
			}
			after := h.stats(t)
			if d := after["http.main.downstream_rq_ws_on_non_ws_route"] - before["http.main.downstream_rq_ws_on_non_ws_route"]; d != 1 {
				t.Errorf("downstream_rq_ws_on_non_ws_route grew by %d, want 1", d)
			}
			time.Sleep(100 * time.Millisecond)
			if n := len(seen()); n != seenBefore {
				t.Errorf("the upstream got %v", seen()[seenBefore:])
			}
			h.alive(t)
		})
	}
	// Not upgrades to Envoy: Upgrade without the connection token, and h2c (whose headers the
	// codec removes, codec_impl.cc:859-864): plain requests, upgrade headers stripped.
	for name, hdrs := range map[string]string{
		"UpgradeWithoutConnectionToken": "Upgrade: websocket\r\n",
		"H2c":                           "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n",
	} {
		t.Run("NotUpgrade/"+name, func(t *testing.T) {
			_, res, body := rawExchange(t, h, "main", "GET", "GET /echo HTTP/1.1\r\nHost: test.com\r\n"+hdrs+"\r\n")
			if res.StatusCode != 200 {
				t.Fatalf("status %d %q", res.StatusCode, body)
			}
			rep := echoOf(t, body)
			for _, k := range []string{"upgrade", "connection", "http2-settings"} {
				if v := rep.Values(k); len(v) > 0 {
					t.Errorf("upstream got %s: %v", k, v)
				}
			}
		})
	}
}

func echoOf(t *testing.T, body string) *echoReply {
	t.Helper()
	rep, err := parseEcho(body)
	if err != nil {
		t.Fatalf("echo reply %q: %v", body, err)
	}
	return rep
}

// hostRSS is the host's resident set in bytes (/proc/<pid>/status VmRSS).
func hostRSS(t *testing.T, h *hostProc) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", h.Pid()))
	if err != nil {
		t.Fatalf("host status: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// rssBound is the host RSS growth the flow control tests allow: 48 MiB, or unbounded (0)
// under AddressSanitizer, whose quarantine keeps freed memory resident (up to 256 MiB by
// default), so RSS measures churn there, not what the host holds; the counters still show
// the pauses.
func rssBound() int64 {
	if strings.Contains(filepath.Base(os.Getenv("MOE_HOST_BIN")), "asan") {
		return 0
	}
	return 48 << 20
}

// waitCounter polls name until it grew by at least want over before (bounded by d).
func waitCounter(t *testing.T, h *hostProc, before map[string]int64, name string, want int64, d time.Duration) {
	t.Helper()
	var got int64
	if !tb.Poll(d, func() bool { got = h.stats(t)[name] - before[name]; return got >= want }) {
		t.Fatalf("%s grew by %d within %v, want >= %d", name, got, d, want)
	}
}

// stallUpstream accepts connections and never reads from them (until the test ends).
func stallUpstream(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestFlowControl: per-connection write watermarks as Envoy's (high = the buffer limit, low =
// half of it). A downstream that does not read pauses the upstream read
// (codec_impl.cc onAboveHighWatermark -> the router's DownstreamWatermarkManager ->
// readDisable, upstream_request.cc:773-800), and so does a Go filter holding response data
// over the limit (StopAndBufferWatermark: filter_manager.cc responseDataTooLarge); an upstream
// that does not read pauses the downstream read (upstream_request.cc:810-824). The host's
// memory stays bounded by the buffers instead of growing with the bodies.
func TestFlowControl(t *testing.T) {
	h := startHardeningWith(t, freePort(t), stallUpstream(t))
	const mib = 1 << 20

	t.Run("SlowReaders", func(t *testing.T) {
		const clients, size = 3, 64 * mib
		if r := h.must(t, req{listener: "flow", path: "/bytes/1024"}); r.status != 200 {
			t.Fatalf("warm-up: %d", r.status)
		}
		base := hostRSS(t, h)
		before := h.stats(t)
		conns := make([]*rawConn, clients)
		for i := range conns {
			conns[i] = h.dial(t, "flow")
			conns[i].write(fmt.Sprintf("GET /bytes/%d HTTP/1.1\r\nHost: test.com\r\n\r\n", size))
		}
		// Nobody reads: each response fills its downstream buffer and pauses its upstream.
		waitCounter(t, h, before, "cluster.backend_a.upstream_flow_control_paused_reading_total", clients, 10*time.Second)
		time.Sleep(300 * time.Millisecond)
		grew := hostRSS(t, h) - base
		if b := rssBound(); b > 0 && grew > b {
			t.Errorf("host RSS grew by %d MiB with %d stalled %d MiB responses, want < %d", grew/mib, clients, size/mib, b/mib)
		}
		t.Logf("host RSS grew by %d KiB with %d stalled %d MiB responses", grew>>10, clients, size/mib)
		// Then everything arrives, byte for byte.
		block := pattern(mib)
		errs := make(chan error, clients)
		for _, rc := range conns {
			go func(rc *rawConn) {
				rc.c.SetReadDeadline(time.Now().Add(60 * time.Second))
				res, err := http.ReadResponse(rc.r, &http.Request{Method: "GET"})
				if err != nil {
					errs <- err
					return
				}
				defer res.Body.Close()
				buf := make([]byte, 64<<10)
				off := 0
				for {
					n, err := res.Body.Read(buf)
					for i := 0; i < n; i++ {
						if buf[i] != block[(off+i)%mib] {
							errs <- fmt.Errorf("byte %d differs", off+i)
							return
						}
					}
					off += n
					if err == io.EOF {
						break
					}
					if err != nil {
						errs <- fmt.Errorf("after %d bytes: %v", off, err)
						return
					}
				}
				if off != size {
					errs <- fmt.Errorf("got %d bytes, want %d", off, size)
					return
				}
				errs <- nil
			}(rc)
		}
		for range conns {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		after := h.stats(t)
		if d := after["cluster.backend_a.upstream_flow_control_resumed_reading_total"] - before["cluster.backend_a.upstream_flow_control_resumed_reading_total"]; d < clients {
			t.Errorf("upstream_flow_control_resumed_reading_total grew by %d, want >= %d", d, clients)
		}
	})

	// A Go filter busy with a response chunk in a goroutine (20 ms each): what arrives
	// meanwhile waits in the golang filter's data buffer, whose watermarks (the 64 KiB limit,
	// processor_state.cc:312-339) pause and resume the upstream read. The body arrives whole,
	// as Go changed it. (A Go filter returning StopAndBufferWatermark synchronously holds its
	// chunks in doDataList, which has no watermark in Envoy either.)
	t.Run("GoFilterWatermark", func(t *testing.T) {
		const size = 2 * mib
		before := h.stats(t)
		rc := h.dial(t, "flowgo")
		rc.write(fmt.Sprintf("GET /bytes/%d HTTP/1.1\r\nHost: test.com\r\nx-test-mode: async\r\n"+
			"x-test-data-sleep-ms: 20\r\nx-test-ed-mode: upper\r\n\r\n", size))
		rc.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		res, body, err := rc.readResponse("GET")
		if err != nil {
			t.Fatalf("response: %v", err)
		}
		if res.StatusCode != 200 || body != strings.ToUpper(string(pattern(size))) {
			t.Fatalf("got %d with %d bytes, want 200 and the %d bytes upper-cased", res.StatusCode, len(body), size)
		}
		after := h.stats(t)
		for _, c := range []string{"cluster.backend_a.upstream_flow_control_paused_reading_total", "cluster.backend_a.upstream_flow_control_resumed_reading_total"} {
			if d := after[c] - before[c]; d < 1 {
				t.Errorf("%s grew by %d, want >= 1", c, d)
			}
		}
	})

	// An upstream that never reads: its connection's write buffer fills and the downstream
	// read pauses, so the client's upload stops instead of piling up in the host.
	t.Run("UpstreamNotReading", func(t *testing.T) {
		const size = 256 * mib
		base := hostRSS(t, h)
		before := h.stats(t)
		rc := h.dial(t, "flow")
		rc.write(fmt.Sprintf("POST /stall HTTP/1.1\r\nHost: test.com\r\nContent-Length: %d\r\n\r\n", size))
		written := make(chan int, 1)
		go func() {
			chunk := make([]byte, 256<<10)
			n := 0
			deadline := time.Now().Add(3 * time.Second)
			for n < size && time.Now().Before(deadline) {
				rc.c.SetWriteDeadline(deadline)
				m, err := rc.c.Write(chunk)
				n += m
				if err != nil {
					break
				}
			}
			written <- n
		}()
		waitCounter(t, h, before, "cluster.stall.upstream_flow_control_backed_up_total", 1, 5*time.Second)
		waitCounter(t, h, before, "http.flow.downstream_flow_control_paused_reading_total", 1, 5*time.Second)
		n := <-written
		if n >= size {
			t.Fatalf("the whole %d MiB body was accepted", size/mib)
		}
		grew := hostRSS(t, h) - base
		if b := rssBound(); b > 0 && grew > b {
			t.Errorf("host RSS grew by %d MiB after %d MiB uploaded to a stalled upstream, want < %d", grew/mib, n/mib, b/mib)
		}
		t.Logf("uploaded %d MiB before the host stopped reading; host RSS grew by %d KiB", n/mib, grew>>10)
	})
	h.alive(t)
}
