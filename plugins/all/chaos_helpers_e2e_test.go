package all_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// The chaos suite's pieces: the bootstrap (the demo's, with more), a misbehaving upstream, and
// an authorization service that can go away and come back.

// chaosBootstrap is envoy/envoy.yaml, the demo that `make run` serves, unchanged where it
// is the demo (its limit-req, key-auth, consumer-restriction, consumers and routes), with:
//   - the e2e library (out/libmoe-e2e.so: every shipped plugin plus the test plugins) instead
//     of out/libgolang.so, and first in the chain e2e-stats (counters on /e2e/stats), e2e-sync
//     and e2e-async, which panic in a phase or block when a request asks them to;
//   - hmac-auth with its nonces in Redis (fail closed) on route /hmac/ instead of key-auth,
//     ext-auth on route /ext/, and limit-count (Redis, fail open) on every route;
//   - route /bad/ (no auth, 1s timeout) to a misbehaving upstream.
func chaosBootstrap(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(hosttest.RepoRoot(t), "envoy/envoy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const item = "                  " // a plugin list item of the demo
	route := func(name, prefix, cluster, extra, plugins string) string {
		s := "              - name: " + name + "\n" +
			"                match: {prefix: \"" + prefix + "\"}\n" +
			"                route: {cluster: " + cluster + extra + "}\n"
		if plugins != "" {
			s += `                typed_per_filter_config:
                  envoy.filters.http.golang:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute
                    plugins_config:
                      moe:
                        config:
                          "@type": type.googleapis.com/xds.type.v3.TypedStruct
                          value:
                            plugins: ` + plugins + "\n"
		}
		return s
	}
	pairs := []string{
		"port_value: 10000", "port_value: {{.Port}}",
		"port_value: 9901", "port_value: {{.AdminPort}}",
		"port_value: 8080", "port_value: {{.UpstreamPort}}",
		"library_id: moe\n", "library_id: moe-e2e\n",
		"library_path: out/libgolang.so", "library_path: {{.Library}}",
		// The test plugins first.
		"value:\n" + item + "plugins:\n", "value:\n" + item + "plugins:\n" +
			item + "- {name: e2e-stats}\n" +
			item + "- {name: e2e-sync, config: {tag: s}}\n" +
			item + "- {name: e2e-async, config: {tag: a}}\n",
		// hmac-auth next to key-auth, on for /hmac/ only, with a consumer of its own.
		item + "# Authenticated consumers may read", item + "- name: hmac-auth\n" +
			item + "  disabled: true\n" +
			item + "  config:\n" +
			item + "    clock_skew: 300s\n" +
			item + "    hide_credentials: true\n" +
			item + "    nonce_store: {type: redis, failure_policy: fail_closed, redis: {addrs: [\"{{.Redis}}\"], timeout: 5s}}\n" +
			item + "    consumers: [{name: carol, group: users, keys: [{key_id: carol-1, secret: " + chaosHMACSecret + "}]}]\n" +
			item + "# Authenticated consumers may read",
		// After the demo's chain: ext-auth for /ext/, limit-count everywhere.
		item + "# Consumers are defined once", item + "- name: ext-auth\n" +
			item + "  disabled: true\n" +
			item + "  config: {url: \"http://{{.AuthAddr}}\", timeout: 5s}\n" +
			item + "- name: limit-count\n" +
			item + "  config: {count: 100000000, time_window: 60s, key: \"$remote_addr\", failure_policy: fail_open,\n" +
			item + "           redis: {addrs: [\"{{.Redis}}\"], timeout: 5s}}\n" +
			item + "# Consumers are defined once",
		"              - name: default\n",
		route("bad", "/bad/", "bad", ", timeout: 1s", "[{name: key-auth, disabled: true}, {name: consumer-restriction, disabled: true}]") +
			route("ext", "/ext/", "echo", "", "[{name: ext-auth}]") +
			route("hmac", "/hmac/", "echo", "", "[{name: key-auth, disabled: true}, {name: hmac-auth}]") +
			"              - name: default\n",
	}
	s := string(raw)
	for i := 0; i < len(pairs); i += 2 {
		if n := strings.Count(s, pairs[i]); n != 1 {
			t.Fatalf("envoy/envoy.yaml has %d times %q (the chaos suite edits the demo there; keep its shape)", n, pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s + `  - name: bad
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: bad
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: {{.BadPort}}}}}
`
}

const chaosHMACSecret = "carol-secret-0123456789abcdef"

// badUpstream is a loopback HTTP/1.1 upstream that misbehaves as the path says (after /bad/):
// "ok" answers 200 "ok" (keep-alive), "reset" resets the connection without answering, "close"
// closes it without answering, "stall" never answers (the route timeout must end it),
// "partial" sends a 200 head announcing 1000 bytes, 100 of them, then resets.
type badUpstream struct {
	ln    net.Listener
	port  int
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startBadUpstream(t *testing.T) *badUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &badUpstream{ln: ln, port: ln.Addr().(*net.TCPAddr).Port, conns: map[net.Conn]struct{}{}}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns[c] = struct{}{}
			b.mu.Unlock()
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.serve(c)
				b.mu.Lock()
				delete(b.conns, c)
				b.mu.Unlock()
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close sends RST
	}
	c.Close()
}

func (b *badUpstream) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // bounded: an idle pooled connection goes after 30s
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		switch strings.TrimPrefix(req.URL.Path, "/bad/") {
		case "ok":
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nx-upstream: bad\r\n\r\nok"); err != nil {
				return
			}
		case "reset":
			resetConn(c)
			return
		case "close":
			return
		case "stall": // until the host gives up (route timeout) or 10s
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.Copy(io.Discard, br)
			return
		case "partial":
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nx-upstream: bad\r\n\r\n"+strings.Repeat("p", 100))
			time.Sleep(20 * time.Millisecond)
			resetConn(c)
			return
		default:
			_, _ = io.WriteString(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
		}
	}
}

// authService is ext-auth's authorization service on a fixed loopback port: it allows every
// request except paths under /ext/deny (403 "denied by the auth service"). Stop takes it
// away (listener and connections closed, the port refuses), Start brings it back on the
// same port.
type authService struct {
	addr     string
	mu       sync.Mutex
	srv      *http.Server
	done     chan struct{}
	Requests int64
}

const authDenied = "denied by the auth service"

func startAuthService(t *testing.T) *authService {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &authService{addr: ln.Addr().String()}
	a.serve(ln)
	t.Cleanup(a.Stop)
	return a
}

func (a *authService) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.Requests++
		a.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/ext/deny") {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, authDenied)
			return
		}
		w.WriteHeader(http.StatusOK)
	}), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	a.mu.Lock()
	a.srv, a.done = srv, done
	a.mu.Unlock()
}

// Stop takes the service away: the port refuses connections until Start.
func (a *authService) Stop() {
	a.mu.Lock()
	srv, done := a.srv, a.done
	a.srv = nil
	a.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Close()
	<-done
}

// Start brings the service back on its port.
func (a *authService) Start(t *testing.T) {
	t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port is ours; a close may take a moment to release it
		if ln, err = net.Listen("tcp", a.addr); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("auth service back on %s: %v", a.addr, err)
	}
	a.serve(ln)
}
