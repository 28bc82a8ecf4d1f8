// Package conformance is the moe-host conformance suite: it runs the real moe-host binary with
// bootstrap YAMLs rendered from testdata/*.yaml.tmpl, loads out/libconformance.so (the plugins in
// ./plugins), and checks over real HTTP that the host behaves like Envoy's golang filter.
//
// The host is started through shared/testing/hosttest (the one way tests start moe-host), which
// builds the binaries it runs (make -s out/<name>) and stops and checks the host at the end.
//
//	MOE_OUT           directory with the binaries, taken as they are (default <repo>/out, built)
//	MOE_HOST_BIN      host binary (default $MOE_OUT/moe-host; the sanitizer run uses moe-host-asan)
//	MOE_REQUIRE_HOST  1: missing binaries fail the tests instead of skipping them
package conformance

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

type binaries struct {
	host, moectl, lib string
}

// findBinaries builds (or, with MOE_OUT, locates) the host, moectl and the plugin library
// through shared/testing/hosttest, skipping (or failing when MOE_REQUIRE_HOST=1) when one is
// missing.
func findBinaries(t testing.TB) binaries {
	t.Helper()
	return binaries{
		host:   hosttest.Require(t, "moe-host"),
		moectl: hosttest.Require(t, "moectl"),
		lib:    hosttest.Require(t, "libconformance.so"),
	}
}

func freePort(t testing.TB) int { return hosttest.FreePort(t) }

// hostProc is one running moe-host (hosttest.Host) with the suite's HTTP client.
type hostProc struct {
	*hosttest.Host
	t      testing.TB
	ports  map[string]int
	client *http.Client
}

// hostSpec describes a host to start: template name (testdata/<tmpl>.yaml.tmpl), listener names
// that need ports, and extra template data ({{.Library}}, {{.AdminPort}} and {{.Ports.<name>}}
// come from hosttest).
type hostSpec struct {
	tmpl      string
	listeners []string
	data      map[string]any
	// allowNonLoopback: the test makes the loopback guard refuse on purpose.
	allowNonLoopback bool
	// args are more command-line arguments for the host.
	args []string
}

func startHost(t testing.TB, spec hostSpec) *hostProc {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", spec.tmpl+".yaml.tmpl"))
	if err != nil {
		t.Fatalf("template: %v", err)
	}
	host := hosttest.Start(t, string(raw), hosttest.Vars(spec.data), hosttest.Options{
		Library:          "libconformance.so",
		Listeners:        spec.listeners,
		ConfigName:       spec.tmpl + ".yaml",
		AllowNonLoopback: spec.allowNonLoopback,
		Args:             spec.args,
	})
	h := &hostProc{Host: host, t: t, ports: host.Ports}
	h.client = &http.Client{
		Timeout: 15 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	// Registered after the host's cleanup, so it runs first: no idle client connection is
	// left when the host drains.
	t.Cleanup(h.client.CloseIdleConnections)
	return h
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}

// alive fails the test if the host has exited.
func (h *hostProc) alive(t testing.TB) {
	t.Helper()
	h.Alive(t)
}

func (h *hostProc) addr(listener string) string {
	p, ok := h.ports[listener]
	if !ok {
		h.t.Fatalf("no listener %q", listener)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

func (h *hostProc) url(listener, path string) string {
	return "http://" + h.addr(listener) + path
}

// req describes one HTTP request through the host.
type req struct {
	listener string
	method   string
	path     string
	host     string // default test.com
	headers  map[string]string
	body     string
	trailers map[string]string // sends a chunked body with trailers
}

type resp struct {
	status   int
	header   http.Header
	body     string
	trailer  http.Header
	err      error
	duration time.Duration
}

func (r *resp) get(k string) string { return r.header.Get(k) }

func (h *hostProc) do(t testing.TB, r req) *resp {
	t.Helper()
	return h.doWith(t, h.client, r)
}

func (h *hostProc) doWith(t testing.TB, c *http.Client, r req) *resp {
	t.Helper()
	method := r.method
	if method == "" {
		method = "GET"
	}
	chunked := r.trailers != nil || strings.EqualFold(r.headers["transfer-encoding"], "chunked")
	var body io.Reader
	if r.body != "" || chunked {
		body = strings.NewReader(r.body)
		if chunked {
			body = io.MultiReader(strings.NewReader(r.body)) // hides the length: chunked
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, method, h.url(r.listener, r.path), body)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	hr.Host = r.host
	if hr.Host == "" {
		hr.Host = "test.com"
	}
	for k, v := range r.headers {
		if strings.EqualFold(k, "transfer-encoding") {
			continue
		}
		hr.Header.Set(k, v)
	}
	if chunked {
		hr.ContentLength = -1
		hr.TransferEncoding = []string{"chunked"}
	}
	if r.trailers != nil {
		hr.Trailer = http.Header{}
		for k, v := range r.trailers {
			hr.Trailer.Set(k, v)
		}
	}
	start := time.Now()
	res, err := c.Do(hr)
	out := &resp{err: err}
	if err != nil {
		out.duration = time.Since(start)
		return out
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	out.status, out.header, out.body, out.trailer, out.err = res.StatusCode, res.Header, string(data), res.Trailer, err
	out.duration = time.Since(start)
	return out
}

// must does the request and fails on a transport error.
func (h *hostProc) must(t testing.TB, r req) *resp {
	t.Helper()
	out := h.do(t, r)
	if out.err != nil {
		h.alive(t)
		t.Fatalf("%s %s via %s: %v", r.method, r.path, r.listener, out.err)
	}
	return out
}

// stats returns the admin /stats counters and gauges as name -> value.
func (h *hostProc) stats(t testing.TB) map[string]int64 {
	t.Helper()
	res, err := h.client.Get(h.AdminURL + "/stats")
	if err != nil {
		t.Fatalf("admin /stats: %v", err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("admin /stats: status %d: %s", res.StatusCode, data)
	}
	m := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			m[strings.TrimSpace(k)] = n
		}
	}
	return m
}

// adminGet returns the body of an admin endpoint (200 required).
func (h *hostProc) adminGet(t testing.TB, path string) string {
	t.Helper()
	res, err := h.client.Get(h.AdminURL + path)
	if err != nil {
		t.Fatalf("admin %s: %v", path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("admin %s: status %d", path, res.StatusCode)
	}
	return string(data)
}

func (h *hostProc) ready(t testing.TB) int {
	t.Helper()
	res, err := h.client.Get(h.AdminURL + "/ready")
	if err != nil {
		t.Fatalf("admin /ready: %v", err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// events fetches what the plugins recorded for an x-test-id (through the "main" listener).
func (h *hostProc) events(t testing.TB, id string) []string {
	t.Helper()
	r := h.must(t, req{listener: "main", path: "/query", headers: map[string]string{"x-test-query": id}})
	if r.status != 200 || r.get("x-query") != id {
		t.Fatalf("event query %s: status %d header %q body %q", id, r.status, r.get("x-query"), r.body)
	}
	if r.body == "" {
		return nil
	}
	return strings.Split(r.body, "\n")
}

// waitEvents polls the events of id until cond holds (bounded).
func (h *hostProc) waitEvents(t testing.TB, id string, d time.Duration, cond func([]string) bool) []string {
	t.Helper()
	var ev []string
	if !tb.Poll(d, func() bool { ev = h.events(t, id); return cond(ev) }) {
		t.Fatalf("events of %s: condition not met within %v; have:\n%s", id, d, strings.Join(ev, "\n"))
	}
	return ev
}

func hasEvent(ev []string, prefix string) bool {
	for _, e := range ev {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func countEvents(ev []string, prefix string) int {
	n := 0
	for _, e := range ev {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

func eventIndex(ev []string, prefix string) int {
	for i, e := range ev {
		if strings.HasPrefix(e, prefix) {
			return i
		}
	}
	return -1
}

// rawConn is a client connection with byte-level control.
type rawConn struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func (h *hostProc) dial(t testing.TB, listener string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", h.addr(listener), 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", listener, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (rc *rawConn) write(s string) {
	rc.t.Helper()
	rc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatalf("raw write: %v", err)
	}
}

// chunk writes one HTTP/1.1 chunk.
func (rc *rawConn) chunk(s string) {
	rc.t.Helper()
	rc.write(fmt.Sprintf("%x\r\n%s\r\n", len(s), s))
}

func (rc *rawConn) readResponse(method string) (*http.Response, string, error) {
	rc.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	res, err := http.ReadResponse(rc.r, &http.Request{Method: method})
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res, string(data), err
}

// closedByPeer reports whether the server closed the connection (EOF) within d.
func (rc *rawConn) closedByPeer(d time.Duration) bool {
	rc.c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 1)
	_, err := rc.r.Read(buf)
	if err == nil {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return true
}
