package e2e

// Websocket upgrades through moe-host (upgrade_configs): a real websocket client
// (gorilla/websocket) and the echo upstream's /ws, the Go filter on the upgraded stream.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// wsBootstrap: one moe golang filter ({{.Plugins}}), the connection manager's upgrade_configs
// ({{.HCMUpgrades}}), and three routes to the echo upstream: /on allows websocket whatever
// the connection manager says, /off refuses it, everything else follows the connection
// manager.
const wsBootstrap = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: {{.AdminPort}}}}
static_resources:
  listeners:
  - name: ws
    address: {socket_address: {address: 127.0.0.1, port_value: {{.Port}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: ws
          stream_idle_timeout: {{.IdleTimeout}}
          upgrade_configs: {{.HCMUpgrades}}
          http_filters:
          - name: envoy.filters.http.golang
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
              library_id: moe-e2e
              library_path: {{.Library}}
              plugin_name: moe
              plugin_config:
                "@type": type.googleapis.com/xds.type.v3.TypedStruct
                value: {plugins: {{.Plugins}}}
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          route_config:
            name: ws
            virtual_hosts:
            - name: ws
              domains: ["*"]
              routes:
              - match: {prefix: /on/}
                route: {cluster: upstream, prefix_rewrite: /, upgrade_configs: [{upgrade_type: websocket}]}
              - match: {prefix: /off/}
                route: {cluster: upstream, prefix_rewrite: /, upgrade_configs: [{upgrade_type: websocket, enabled: false}]}
              - match: {prefix: /}
                route: {cluster: upstream}
  clusters:
  - name: upstream
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: upstream
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: {{.UpstreamPort}}}}}
`

type wsHost struct {
	*hosttest.Host
	up *echo.Server
	ws string // ws://127.0.0.1:<port>
}

type wsConfig struct {
	hcmUpgrades string // YAML list
	plugins     string // JSON list
	idleTimeout string // stream_idle_timeout
}

func startWSHost(t *testing.T, c wsConfig) *wsHost {
	t.Helper()
	if c.hcmUpgrades == "" {
		c.hcmUpgrades = "[{upgrade_type: websocket}]"
	}
	if c.plugins == "" {
		c.plugins = `[{"name": "e2e-stats"}, {"name": "e2e-stream-bytes"}]`
	}
	if c.idleTimeout == "" {
		c.idleTimeout = "300s"
	}
	up := echo.Start(t, "upstream")
	h := hosttest.Start(t, wsBootstrap, hosttest.Vars{
		"HCMUpgrades": c.hcmUpgrades, "Plugins": c.plugins, "IdleTimeout": c.idleTimeout, "UpstreamPort": up.Port,
	}, hosttest.Options{Library: "libmoe-e2e.so"})
	return &wsHost{Host: h, up: up, ws: fmt.Sprintf("ws://127.0.0.1:%d", h.Port)}
}

func (h *wsHost) dial(t *testing.T, path string, hdr ...string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	header := http.Header{}
	for i := 0; i+1 < len(hdr); i += 2 {
		header.Add(hdr[i], hdr[i+1])
	}
	c, resp, err := d.Dial(h.ws+path, header)
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

func (h *wsHost) mustDial(t *testing.T, path string, hdr ...string) (*websocket.Conn, *http.Response) {
	t.Helper()
	c, resp, err := h.dial(t, path, hdr...)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)\n%s", path, err, status, tail(h.Output()))
	}
	return c, resp
}

// echoMessages sends each message and requires it back, same type and bytes.
func echoMessages(t *testing.T, c *websocket.Conn, msgs []wsMessage) {
	t.Helper()
	for _, m := range msgs {
		if err := c.WriteMessage(m.kind, m.data); err != nil {
			t.Fatalf("write: %v", err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		kind, got, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read echo of %d bytes: %v", len(m.data), err)
		}
		if kind != m.kind || string(got) != string(m.data) {
			t.Fatalf("echo: got type %d %d bytes, want type %d %d bytes", kind, len(got), m.kind, len(m.data))
		}
	}
}

type wsMessage struct {
	kind int
	data []byte
}

func (h *wsHost) e2eCounters(t *testing.T) map[string]int {
	t.Helper()
	status, _, body := hosttest.Fetch(t, &http.Client{Timeout: 5 * time.Second}, h.URL+"/e2e/stats")
	if status != 200 {
		t.Fatalf("/e2e/stats: %d %q", status, body)
	}
	var m map[string]int
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("/e2e/stats: %v: %q", err, body)
	}
	return m
}

func TestWebSocketMessagesEchoThroughTheGoFilterOnAnUpgradedStream(t *testing.T) {
	h := startWSHost(t, wsConfig{})
	c, resp := h.mustDial(t, "/ws")
	if resp.StatusCode != 101 || resp.Header.Get("x-e2e-stream-bytes") != "101" || resp.Header.Get("x-upstream") != "upstream" {
		t.Fatalf("handshake: %d %v", resp.StatusCode, resp.Header)
	}
	if got := h.Counter(t, "http.ws.downstream_cx_upgrades_active"); got != 1 {
		t.Fatalf("downstream_cx_upgrades_active = %d during the stream, want 1", got)
	}
	msgs := []wsMessage{
		{websocket.TextMessage, []byte("hello")},
		{websocket.BinaryMessage, []byte{0, 1, 2, 0xff, '\r', '\n'}},
		// An HTTP request as payload is never parsed as one.
		{websocket.TextMessage, []byte("GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")},
		{websocket.BinaryMessage, []byte(strings.Repeat("x", 200000))},
	}
	echoMessages(t, c, msgs)
	payload := 0
	for _, m := range msgs {
		payload += len(m.data)
	}

	// The client closes: the upstream sees the close, the stream ends.
	if err := c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "done"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("after the client's close: %v, want the upstream's close 1000", err)
	}
	tb.Eventually(t, "the upstream to see the websocket end", func() bool { return h.up.WebSocketClosed.Load() == 1 })
	tb.Eventually(t, "downstream_cx_upgrades_active to drop to 0", func() bool {
		return h.Counter(t, "http.ws.downstream_cx_upgrades_active") == 0
	})
	if got := h.Counter(t, "http.ws.downstream_cx_upgrades_total"); got != 1 {
		t.Fatalf("downstream_cx_upgrades_total = %d, want 1", got)
	}
	// Go's decodeData and encodeData saw every byte of the pipe: the frames (payload plus
	// headers, masked upstream) both ways.
	m := h.e2eCounters(t)
	if m["bytes-in:/ws"] < payload || m["bytes-out:/ws"] < payload {
		t.Fatalf("Go saw %d bytes going up and %d coming down, want at least %d each (%v)", m["bytes-in:/ws"], m["bytes-out:/ws"], payload, m)
	}
	if got := h.Counter(t, "cluster.upstream.upstream_cx_active"); got != 0 {
		t.Fatalf("upstream_cx_active = %d after the websocket ended, want 0", got)
	}
}

func TestWebSocketUpgradeAllowedOrRefusedByUpgradeConfigs(t *testing.T) {
	cases := []struct {
		name        string
		hcmUpgrades string
		path        string
		want        int
	}{
		{"hcm allows, type compared case-insensitively", "[{upgrade_type: WebSocket}]", "/ws", 101},
		{"hcm allows, the route disables", "[{upgrade_type: websocket}]", "/off/ws", 403},
		{"no upgrade_configs", "[]", "/ws", 403},
		{"no upgrade_configs, the route enables", "[]", "/on/ws", 101},
		{"hcm disables", "[{upgrade_type: websocket, enabled: false}]", "/ws", 403},
		{"hcm disables, the route enables", "[{upgrade_type: websocket, enabled: false}]", "/on/ws", 101},
		{"only another type configured", "[{upgrade_type: spdy/3}]", "/ws", 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startWSHost(t, wsConfig{hcmUpgrades: tc.hcmUpgrades})
			c, resp, err := h.dial(t, tc.path)
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tc.want, err)
			}
			if tc.want == 101 {
				echoMessages(t, c, []wsMessage{{websocket.TextMessage, []byte("through")}})
				return
			}
			// Refused before any filter and any upstream connect.
			if got := h.Counter(t, "http.ws.downstream_rq_ws_on_non_ws_route"); got != 1 {
				t.Fatalf("downstream_rq_ws_on_non_ws_route = %d, want 1", got)
			}
			if got := h.Counter(t, "cluster.upstream.upstream_cx_total"); got != 0 || h.up.Requests.Load() != 0 {
				t.Fatalf("a refused upgrade reached the upstream (%d connections)", got)
			}
		})
	}
}

// An upgrade type nobody configured is refused even with websocket allowed; the bytes after
// it are never read as a request.
func TestUnconfiguredUpgradeTypeIsRefusedAndItsPayloadDropped(t *testing.T) {
	h := startWSHost(t, wsConfig{})
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", h.Port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(conn, "GET /x HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: spdy/3\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 403 || len(rest) != 0 || !resp.Close {
		t.Fatalf("got %d close=%v body %q, want 403, empty, connection closed", resp.StatusCode, resp.Close, rest)
	}
	if h.up.Requests.Load() != 0 {
		t.Fatal("the smuggled request reached the upstream")
	}
}

func TestWebSocketHandshakeTheUpstreamDoesNotAccept(t *testing.T) {
	cases := []struct {
		name     string
		path     string
		want     int
		wantBody bool
	}{
		// upstream_codec_filter.cc:203-220: a non-101 below 400 fails the handshake: the
		// status and headers, no body.
		{"200 instead of 101", "/", 200, false},
		// websocket_allow_4xx_5xx_through_filter_chain: an ordinary response.
		{"404", "/status/404", 404, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startWSHost(t, wsConfig{})
			_, resp, err := h.dial(t, tc.path)
			if !errors.Is(err, websocket.ErrBadHandshake) || resp == nil {
				t.Fatalf("dial: %v, want a bad handshake", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want || resp.Header.Get("x-upstream") != "upstream" || (len(body) > 0) != tc.wantBody {
				t.Fatalf("got %d %v body %q", resp.StatusCode, resp.Header, body)
			}
			if resp.Header.Get("x-e2e-stream-bytes") != fmt.Sprint(tc.want) {
				t.Fatalf("the answer did not go through the Go filter: %v", resp.Header)
			}
			// The upgrade's dedicated upstream connection is closed, never pooled.
			tb.Eventually(t, "the upstream connection to close", func() bool {
				return h.Counter(t, "cluster.upstream.upstream_cx_active") == 0
			})
			if got := h.Counter(t, "cluster.upstream.upstream_cx_destroy"); got != 1 {
				t.Fatalf("upstream_cx_destroy = %d, want 1", got)
			}
		})
	}
}

func TestWebSocketClosedByTheUpstreamClosesTheClient(t *testing.T) {
	h := startWSHost(t, wsConfig{})
	c, _ := h.mustDial(t, "/ws?close_after=1")
	echoMessages(t, c, []wsMessage{{websocket.TextMessage, []byte("one")}})
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure || ce.Text != "bye" {
		t.Fatalf("after the upstream's close: %v, want close 1000 bye", err)
	}
	tb.Eventually(t, "the stream to end", func() bool { return h.Counter(t, "http.ws.downstream_cx_upgrades_active") == 0 })
}

func TestWebSocketClientThatDisappearsClosesTheUpstream(t *testing.T) {
	h := startWSHost(t, wsConfig{})
	c, _ := h.mustDial(t, "/ws")
	echoMessages(t, c, []wsMessage{{websocket.TextMessage, []byte("one")}})
	c.NetConn().Close() // no close frame: the TCP connection just goes
	tb.Eventually(t, "the upstream to see the end", func() bool { return h.up.WebSocketClosed.Load() == 1 })
	tb.Eventually(t, "the stream to end", func() bool { return h.Counter(t, "http.ws.downstream_cx_upgrades_active") == 0 })
}

func TestStreamIdleTimeoutEndsAnIdleWebSocket(t *testing.T) {
	h := startWSHost(t, wsConfig{idleTimeout: "0.3s"})
	c, _ := h.mustDial(t, "/ws")
	// Traffic keeps it alive past the timeout.
	var lastTraffic time.Time
	for i := 0; i < 4; i++ {
		if i > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		echoMessages(t, c, []wsMessage{{websocket.TextMessage, []byte("ping")}})
		lastTraffic = time.Now() // the echo came back: the host saw traffic both ways
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := c.ReadMessage()
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("idle websocket: %v, want the connection closed by the host", err)
	}
	// Counted from the last traffic the client saw, which is after the host's
	// (its timer restarts when it forwards the echo), so the gap is at least
	// the timeout less the host's timer granularity (well under 50 ms).
	if d := time.Since(lastTraffic); d < 250*time.Millisecond {
		t.Fatalf("closed %v after the last traffic, before the 300 ms idle timeout", d)
	}
	if got := h.Counter(t, "http.ws.downstream_rq_idle_timeout"); got != 1 {
		t.Fatalf("downstream_rq_idle_timeout = %d, want 1", got)
	}
	tb.Eventually(t, "the upstream to see the end", func() bool { return h.up.WebSocketClosed.Load() == 1 })
}

func TestKeyAuthRefusesAWebSocketUpgradeWithoutAKey(t *testing.T) {
	h := startWSHost(t, wsConfig{plugins: `[{"name": "key-auth", "config": {"consumers": [{"name": "alice", "keys": ["alice-ws-key-2026"]}]}}]`})

	_, resp, err := h.dial(t, "/ws")
	if resp == nil || resp.StatusCode != 401 {
		t.Fatalf("no key: %v %v, want 401", resp, err)
	}
	if got := h.Counter(t, "cluster.upstream.upstream_cx_total"); got != 0 || h.up.Requests.Load() != 0 {
		t.Fatalf("refused upgrade reached the upstream (%d connections)", got)
	}

	c, resp := h.mustDial(t, "/ws", "apikey", "alice-ws-key-2026")
	if resp.StatusCode != 101 {
		t.Fatalf("with the key: %d", resp.StatusCode)
	}
	echoMessages(t, c, []wsMessage{{websocket.TextMessage, []byte("authenticated")}})
}

// rawUpgrade sends an upgrade request with payload right behind its headers (one write) and
// returns the response and a reader for what follows it.
func rawUpgrade(t *testing.T, h *wsHost, upgrade, path, payload string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", h.Port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n%s", path, upgrade, payload)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("upgrade response: %v\n%s", err, tail(h.Output()))
	}
	return conn, br, resp
}

// A websocket upgrade's payload waits for the upstream's 101 (Envoy's paused_for_websocket_);
// another upgrade type's goes up at once. Either way the upstream sees connection and upgrade,
// and after the 101 both directions are a raw pipe.
func TestUpgradePayloadBeforeThe101(t *testing.T) {
	cases := []struct {
		upgrade   string
		wantEarly string // what the upstream received before it answered
	}{
		{"websocket", `""`},
		{"x-echo-proto", `"EARLY"`},
	}
	h := startWSHost(t, wsConfig{hcmUpgrades: "[{upgrade_type: websocket}, {upgrade_type: X-Echo-Proto}]"})
	for _, tc := range cases {
		t.Run(tc.upgrade, func(t *testing.T) {
			conn, br, resp := rawUpgrade(t, h, tc.upgrade, "/upgrade?early=1", "EARLY")
			if resp.StatusCode != 101 || resp.Header.Get("x-echo-early") != tc.wantEarly ||
				resp.Header.Get("x-echo-request-upgrade") != tc.upgrade || resp.Header.Get("x-echo-request-connection") != "Upgrade" ||
				resp.Header.Get("Upgrade") != tc.upgrade || !strings.EqualFold(resp.Header.Get("Connection"), "upgrade") ||
				resp.Header.Get("x-e2e-stream-bytes") != "101" {
				t.Fatalf("101: %d %v", resp.StatusCode, resp.Header)
			}
			if _, err := io.WriteString(conn, "more"); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len("EARLYmore"))
			if _, err := io.ReadFull(br, got); err != nil || string(got) != "EARLYmore" {
				t.Fatalf("piped back %q, %v; want EARLYmore", got, err)
			}
		})
	}
}

// The pipe keeps the watermarks of ordinary streams: a client that sends much more than it
// reads makes the host pause reading the upstream (its write buffer to the client is full)
// and then the client (the upstream's buffer is full), and every byte still arrives in order.
func TestUpgradedStreamFlowControl(t *testing.T) {
	h := startWSHost(t, wsConfig{hcmUpgrades: "[{upgrade_type: x-echo-proto}]"})
	conn, br, resp := rawUpgrade(t, h, "x-echo-proto", "/upgrade", "")
	if resp.StatusCode != 101 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	const total = 32 << 20
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	pattern := func(i int) byte { return byte(i*7 + i/4096) }
	werr := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for off := 0; off < total; off += len(buf) {
			for i := range buf {
				buf[i] = pattern(off + i)
			}
			if _, err := conn.Write(buf); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	// Not reading yet: the host must push back on both sides.
	tb.Eventually(t, "the host to pause reading the upstream and the client", func() bool {
		return h.Counter(t, "cluster.upstream.upstream_flow_control_paused_reading_total") > 0 &&
			h.Counter(t, "http.ws.downstream_flow_control_paused_reading_total") > 0
	})
	buf := make([]byte, 64<<10)
	for off := 0; off < total; {
		n, err := br.Read(buf)
		for i := 0; i < n; i++ {
			if buf[i] != pattern(off+i) {
				t.Fatalf("byte %d: got %d, want %d", off+i, buf[i], pattern(off+i))
			}
		}
		off += n
		if err != nil {
			t.Fatalf("read after %d bytes: %v", off, err)
		}
	}
	if err := <-werr; err != nil {
		t.Fatalf("write: %v", err)
	}
}

// A plugin that adds upgrade headers to an ordinary request does not make it an upgrade: the
// upstream gets a framed body and no connection/upgrade (otherwise the body would go unframed
// and could smuggle a request).
func TestFilterAddedUpgradeHeadersDoNotUnframeARequestBody(t *testing.T) {
	h := startWSHost(t, wsConfig{plugins: `[{"name": "e2e-set-headers", "config": {"request": {"connection": "upgrade", "upgrade": "websocket"}}}]`})
	pr, pw := io.Pipe()
	go func() {
		// Unknown length: sent chunked, so only the proxy's framing delimits it.
		_, _ = io.WriteString(pw, "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
		_ = pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, h.URL+"/", pr)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	e := hosttest.DecodeEcho(t, resp)
	if e.Body != "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n" || e.Header("upgrade") != "" || h.up.Requests.Load() != 1 {
		t.Fatalf("upstream saw body %q, upgrade %q, %d requests", e.Body, e.Header("upgrade"), h.up.Requests.Load())
	}
}
