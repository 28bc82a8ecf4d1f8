// Package e2e runs the moe framework end to end: the test plugins of
// ./testplugins in out/libmoe-e2e.so loaded by moe-host (cgo/host), real HTTP
// from a Go client to the echo upstream (shared/testing/echo). The host and
// the library are started and built fresh by shared/testing/hosttest.
package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// host is moe-host running the e2e bootstrap (testdata/e2e.yaml.tmpl) with
// out/libmoe-e2e.so (built fresh by hosttest), in front of the echo upstream.
type host struct {
	*hosttest.Host
	port, solo, order int
	client            *http.Client
}

// listeners are the e2e bootstrap's listeners besides the main one.
var listeners = []string{"solo", "order"}

func startHost(t testing.TB, panicAsync bool) *host {
	t.Helper()
	tmpl, err := os.ReadFile(filepath.Join(hosttest.RepoRoot(t), "shared/e2e/testdata/e2e.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	level := os.Getenv("MOE_E2E_LOG_LEVEL")
	if level == "" {
		level = "info"
	}
	up := echo.Start(t, "backend")
	h := hosttest.Start(t, string(tmpl), hosttest.Vars{"Backend": up.Port, "PanicAsync": panicAsync},
		hosttest.Options{Library: "libmoe-e2e.so", Listeners: listeners, LogLevel: level})
	return &host{Host: h, port: h.Port, solo: h.Ports["solo"], order: h.Ports["order"], client: &http.Client{Timeout: 10 * time.Second}}
}

func tail(s string) string {
	if len(s) > 8000 {
		return "...\n" + s[len(s)-8000:]
	}
	return s
}

type response struct {
	status int
	header http.Header
	body   string
}

// up is the request as the echo upstream saw it; it fails the test when the
// response did not come from the upstream.
func (r response) up(t testing.TB) echo.Echoed {
	t.Helper()
	var e echo.Echoed
	if r.header.Get("x-upstream") == "" || json.Unmarshal([]byte(r.body), &e) != nil {
		t.Fatalf("status %d: not an echo upstream answer: %q", r.status, r.body)
	}
	return e
}

func (h *host) do(t testing.TB, method, path string, headers map[string]string, body string) response {
	t.Helper()
	return h.doPort(t, h.port, method, path, headers, body)
}

func (h *host) doPort(t testing.TB, port int, method, path string, headers map[string]string, body string) response {
	t.Helper()
	var rb io.Reader
	if body != "" {
		rb = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), rb)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	r, err := h.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\nhost output:\n%s", method, path, err, tail(h.Output()))
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return response{status: r.StatusCode, header: r.Header, body: string(b)}
}

func (h *host) counters(t testing.TB) map[string]int {
	r := h.do(t, "GET", "/e2e/stats", nil, "")
	m := map[string]int{}
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Fatalf("stats: %d %q: %v", r.status, r.body, err)
	}
	return m
}

// stat reads a counter whose name may carry a stat prefix.
func (h *host) stat(t testing.TB, name string) int {
	for k, v := range h.Stats(t) {
		if k == name || strings.HasSuffix(k, "."+name) {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func TestE2EChainRunsInOrderWithMixedSyncAsync(t *testing.T) {
	h := startHost(t, false)
	r := h.do(t, "GET", "/hello", nil, "")
	if r.status != 200 {
		t.Fatalf("status %d body %q", r.status, r.body)
	}
	if got := r.up(t).Header("x-e2e-trace"); got != "a,b,body" {
		t.Errorf("upstream saw trace %q, want a,b,body", got)
	}
	if got := r.header.Get("x-e2e-trace"); got != "b,a" {
		t.Errorf("response trace %q, want b,a (encode runs in reverse)", got)
	}
}

func TestE2EWholeBodyAndHeaderOnlyPluginsTogether(t *testing.T) {
	h := startHost(t, false)
	r := h.do(t, "POST", "/upload", map[string]string{"content-type": "text/plain"}, "hello body")
	if r.status != 200 || r.up(t).Body != "HELLO BODY" {
		t.Fatalf("status %d body %q", r.status, r.body)
	}
	if r.up(t).Header("x-e2e-body-len") != "10" || r.up(t).Header("x-e2e-trace") != "a,b,body" {
		t.Errorf("upstream headers %v", r.header)
	}
	big := strings.Repeat("x", 2000)
	if r := h.do(t, "POST", "/upload", nil, big); r.status != 413 {
		t.Errorf("over max_bytes: status %d, want 413", r.status)
	}
}

func TestE2EPerRouteMergeAndDisable(t *testing.T) {
	h := startHost(t, false)
	cases := []struct{ path, trace, body string }{
		{"/disable/x", "a,body", "ABC"},     // e2e-async disabled on this route
		{"/override/x", "a2,b,body", "abc"}, // e2e-sync and e2e-body configs replaced
		{"/other", "a,b,body", "ABC"},
	}
	for _, c := range cases {
		r := h.do(t, "POST", c.path, nil, "abc")
		if r.status != 200 || r.up(t).Header("x-e2e-trace") != c.trace || r.up(t).Body != c.body {
			t.Errorf("%s: status %d trace %q body %q, want trace %q body %q", c.path, r.status, r.up(t).Header("x-e2e-trace"), r.up(t).Body, c.trace, c.body)
		}
	}
}

func TestE2EPanicInEachPhaseIs500NamingThePlugin(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("e2e-panic async=%v", async), func(t *testing.T) {
			h := startHost(t, async)
			cases := []struct {
				headers map[string]string
				plugin  string
				reply   bool
			}{
				{map[string]string{"x-e2e-panic": "a:receive"}, "e2e-sync", true},
				{map[string]string{"x-e2e-panic": "b:receive"}, "e2e-async", true},
				{map[string]string{"x-e2e-panic": "a:send"}, "e2e-sync", true},
				{map[string]string{"x-e2e-panic": "b:send"}, "e2e-async", true},
				{map[string]string{"x-e2e-panic-phase": "receive"}, "e2e-panic", true},
				{map[string]string{"x-e2e-panic-phase": "send"}, "e2e-panic", true},
				{map[string]string{"x-e2e-panic-phase": "log"}, "e2e-panic", false},
				{map[string]string{"x-e2e-panic": "a:log"}, "e2e-sync", false},
			}
			for _, c := range cases {
				before := h.stat(t, "moe_panics_total")
				r := h.do(t, "GET", "/p", c.headers, "")
				if c.reply {
					if r.status != 500 || !strings.Contains(r.body, c.plugin) || strings.Contains(r.body, "secret") {
						t.Errorf("%v: status %d body %q, want 500 naming %s", c.headers, r.status, r.body, c.plugin)
					}
				} else if r.status != 200 {
					t.Errorf("%v: status %d, want 200 (panic after the response)", c.headers, r.status)
				}
				tb.Poll(2*time.Second, func() bool { return h.stat(t, "moe_panics_total") > before })
				if after := h.stat(t, "moe_panics_total"); after != before+1 {
					t.Errorf("%v: moe_panics_total %d -> %d", c.headers, before, after)
				}
				if r := h.do(t, "GET", "/ok", nil, ""); r.status != 200 {
					t.Errorf("request after the panic: %d", r.status)
				}
			}
		})
	}
}

func TestE2EStrayGoroutineGetsTypedErrors(t *testing.T) {
	h := startHost(t, false)
	for i := 0; i < 5; i++ {
		if r := h.do(t, "GET", "/stray", map[string]string{"x-e2e-stray": "1"}, ""); r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
	}
	var c map[string]int
	tb.Poll(5*time.Second, func() bool { c = h.counters(t); return c["stray-done"] >= 5 })
	t.Logf("stray counters: %v", c)
	if c["stray-done"] < 5 || c["stray-destroyed"] == 0 || c["stray-untyped"] > 0 || c["stray-untyped-panic"] > 0 {
		t.Errorf("stray goroutines: %v", c)
	}
	if r := h.do(t, "GET", "/after", nil, ""); r.status != 200 {
		t.Errorf("host unhealthy after strays: %d", r.status)
	}
}

func TestE2EClientAbortRunsDestroyAndLogOnce(t *testing.T) {
	h := startHost(t, false)
	before := h.counters(t)
	cl := &http.Client{Timeout: 150 * time.Millisecond}
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/slow", h.port), nil)
	req.Header.Set("x-e2e-sleep", "3000")
	if _, err := cl.Do(req); err == nil {
		t.Fatal("slow request did not time out")
	}
	var c map[string]int
	tb.Poll(5*time.Second, func() bool { c = h.counters(t); return c["ctxdone:b"] > before["ctxdone:b"] })
	if c["ctxdone:b"] <= before["ctxdone:b"] {
		t.Errorf("the blocked plugin never saw ctx.Done(): %v", c)
	}
	// Every request so far (stats requests included) ran each log and destroy hook once.
	for _, tag := range []string{"a", "b"} {
		if c["log:"+tag] != c["destroy:"+tag] {
			t.Errorf("tag %s: %d log hooks vs %d destroy hooks", tag, c["log:"+tag], c["destroy:"+tag])
		}
	}
	if r := h.do(t, "GET", "/after", nil, ""); r.status != 200 {
		t.Errorf("after abort: %d", r.status)
	}
}

func TestE2EDenyIsLocalReplyThroughSenders(t *testing.T) {
	h := startHost(t, false)
	r := h.do(t, "GET", "/deny", map[string]string{"x-e2e-deny": "b"}, "")
	if r.status != 403 || r.body != "denied by b" || r.header.Get("x-e2e-denied-by") != "b" {
		t.Fatalf("status %d body %q headers %v", r.status, r.body, r.header)
	}
	// Senders still run on a local reply (encode path), in reverse order.
	if got := r.header.Get("x-e2e-trace"); got != "b,a" {
		t.Errorf("response trace %q", got)
	}
}

func TestE2EPluginAsItsOwnFilterWithRouteConfig(t *testing.T) {
	h := startHost(t, false)
	for path, want := range map[string]string{"/x": "solo", "/route/x": "solo-route"} {
		r := h.doPort(t, h.solo, "GET", path, nil, "")
		if r.status != 200 || r.up(t).Header("x-e2e-trace") != want || r.header.Get("x-e2e-trace") != want {
			t.Errorf("%s: status %d upstream trace %q response trace %q, want %q", path, r.status, r.up(t).Header("x-e2e-trace"), r.header.Get("x-e2e-trace"), want)
		}
	}
}

// Response headers read on a later response chunk, after the headers phase
// ran in a goroutine: Envoy still lets Go copy them then, but sizes the copy
// by the counts it announced before the connection manager added server (and
// date), and writes past Go's buffer. moe copies them before they leave
// instead; moe-host refuses such a copy and the host's output fails the test
// (hosttest.SanitizerMarkers).
func TestE2EResponseHeadersReadAfterTheyLeft(t *testing.T) {
	h := startHost(t, false)
	// Headers flushed at once, the chunks 100 ms later: they reach the host
	// after the response headers went downstream.
	r := h.raw(t, h.order, "GET /chunked?n=2&delay=100 HTTP/1.1\r\nHost: test.com\r\nx-e2e-late: 1\r\n"+
		"x-multi: a\r\nx-multi: b\r\nConnection: close\r\n\r\n")
	if r.status != 200 || !strings.HasSuffix(r.body, "\nlate: 200 backend") {
		t.Errorf("status %d, body ends %q", r.status, r.body[max(0, len(r.body)-40):])
	}
}

// raw sends one request written by hand (header order and repetition as
// given) to port and returns the response; the body is read whole.
func (h *host) raw(t testing.TB, port int, request string) response {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, tail(h.Output()))
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return response{status: r.StatusCode, header: r.Header, body: string(b)}
}

func TestE2EWholeBodyWithTrailers(t *testing.T) {
	h := startHost(t, false)
	r := h.raw(t, h.port, "POST /trailers HTTP/1.1\r\nHost: test.com\r\nTransfer-Encoding: chunked\r\nTrailer: x-checksum\r\n\r\n"+
		"3\r\nabc\r\n3\r\ndef\r\n0\r\nx-checksum: 42\r\n\r\n")
	e := r.up(t)
	if r.status != 200 || e.Body != "ABCDEF" || e.Trailer("x-checksum") != "42" || e.Header("x-e2e-body-len") != "6" {
		t.Errorf("status %d body %q trailer %q len %q", r.status, e.Body, e.Trailer("x-checksum"), e.Header("x-e2e-body-len"))
	}
}

// moe reads request headers from one copy per phase (cgo/envoyabi) and, once
// its writes reached the host, from that copy with the writes applied as
// Envoy applies them, not from a new copy. Both must be what the host's map
// is: in the host's order, repeated headers where they are, a changed header
// moved last (Envoy's setCopy), a deleted one gone. e2e-order-check compares
// moe's view with a fresh copy in a later golang filter (testplugins/order.go).
func TestE2EHeaderCopyFollowsTheHostsMap(t *testing.T) {
	h := startHost(t, false)
	r := h.raw(t, h.order, "GET /order HTTP/1.1\r\nHost: test.com\r\nx-first: 1\r\nx-multi: a\r\n"+
		"x-gone: 1\r\nx-multi: b\r\nx-last: 1\r\nConnection: close\r\n\r\n")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	e := r.up(t)
	// Only the test's own headers: the host adds others (x-forwarded-proto, ...).
	own := func(entries string) string {
		var out []string
		for _, kv := range strings.Split(entries, ";") {
			switch k, _, _ := strings.Cut(kv, "="); k {
			case "x-first", "x-multi", "x-gone", "x-last", "x-new":
				out = append(out, kv)
			}
		}
		return strings.Join(out, ";")
	}
	if got, want := own(e.Header("x-e2e-first")), "x-first=1;x-multi=a;x-gone=1;x-multi=b;x-last=1"; got != want {
		t.Errorf("first copy in the order %q, want the wire's %q", got, want)
	}
	if got, want := own(e.Header("x-e2e-view")), "x-last=1;x-first=changed;x-multi=a;x-multi=b;x-multi=c;x-new=n"; got != want {
		t.Errorf("copy after the writes %q, want %q", got, want)
	}
	if e.Header("x-first") != "changed" || e.Header("x-gone") != "" || strings.Join(e.Headers["x-multi"], ",") != "a,b,c" || e.Header("x-new") != "n" {
		t.Errorf("upstream got x-first %q x-gone %q x-multi %q x-new %q", e.Header("x-first"), e.Header("x-gone"), e.Headers["x-multi"], e.Header("x-new"))
	}
	// Trailers go the same way (their own C calls).
	r = h.raw(t, h.order, "POST /order HTTP/1.1\r\nHost: test.com\r\nx-multi: a\r\nx-multi: b\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"3\r\nabc\r\n0\r\nx-checksum: 42\r\nx-multi: a\r\nx-drop: 1\r\nx-multi: b\r\n\r\n")
	if r.status != 200 {
		t.Fatalf("with trailers: status %d: %s", r.status, r.body)
	}
	e = r.up(t)
	if got, want := e.Trailer("x-e2e-trailers"), "x-checksum=42;x-multi=a;x-drop=1;x-multi=b"; got != want {
		t.Errorf("trailers read in the order %q, want the wire's %q", got, want)
	}
	if e.Trailer("x-checksum") != "changed" || e.Trailer("x-drop") != "" || strings.Join(e.Trailers["x-multi"], ",") != "a,b,c" || e.Body != "abc" {
		t.Errorf("upstream got trailers %v, body %q", e.Trailers, e.Body)
	}
	if strings.Contains(h.Output(), "using the Envoy Go SDK's methods, not its state") {
		t.Errorf("moe fell back to the SDK's header maps:\n%s", tail(h.Output()))
	}
}

func TestE2EVariablesResolveThroughTheHost(t *testing.T) {
	h := startHost(t, false)
	r := h.do(t, "GET", "/vars/x?a=1&b=2", map[string]string{"cookie": "z=0; c=2", "x-user": "alice", "x-request-id": "rid-42"}, "")
	want := "r_default|backend|GET|/vars/x|1|2|alice|rid-42"
	got := r.up(t).Header("x-e2e-vars")
	// $cluster is read on the request path: like Envoy (conn_manager_impl.cc
	// setVirtualHostRoute), moe-host sets the upstream cluster when it resolves
	// the route, before the router runs.
	if r.status != 200 || got != want {
		t.Errorf("status %d vars %q, want %q", r.status, got, want)
	}
}
