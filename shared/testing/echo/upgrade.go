package echo

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// handleUpgrade is /upgrade, a generic HTTP/1.1 upgrade (any Upgrade type, no websocket
// framing): it answers 101 with the request's upgrade header and then sends back every byte it
// reads until the client closes. The 101 tells what the upgrade request looked like upstream:
// x-echo-request-connection and x-echo-request-upgrade carry the request's headers, and with
// ?early=1 it first waits (up to 300 ms after the first byte, 2 s for it) for bytes sent before
// its answer and returns them in x-echo-early (quoted with %q), then echoes them after the 101.
func handleUpgrade(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Upgrade") == "" {
		http.Error(w, "/upgrade needs an Upgrade header", http.StatusBadRequest)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cannot hijack", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	var early []byte
	if r.URL.Query().Get("early") == "1" {
		early = readEarly(conn, rw.Reader)
	}
	var b strings.Builder
	b.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n")
	fmt.Fprintf(&b, "Upgrade: %s\r\n", r.Header.Get("Upgrade"))
	fmt.Fprintf(&b, "x-echo-request-connection: %s\r\n", r.Header.Get("Connection"))
	fmt.Fprintf(&b, "x-echo-request-upgrade: %s\r\n", r.Header.Get("Upgrade"))
	if r.URL.Query().Get("early") == "1" {
		fmt.Fprintf(&b, "x-echo-early: %q\r\n", early)
	}
	b.WriteString("\r\n")
	_ = conn.SetDeadline(time.Now().Add(wsIdleLimit))
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return
	}
	if len(early) > 0 {
		if _, err := conn.Write(early); err != nil {
			return
		}
	}
	// Echo until the client closes (bounded by the deadline above and maxBytes).
	_, _ = io.Copy(conn, io.LimitReader(rw.Reader, maxBytes))
}

// readEarly collects what the client sends before the 101.
func readEarly(conn interface{ SetReadDeadline(time.Time) error }, r io.Reader) []byte {
	var out []byte
	buf := make([]byte, 4096)
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	for len(out) < 1<<16 {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			break
		}
		_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	}
	_ = conn.SetReadDeadline(time.Time{})
	return out
}
