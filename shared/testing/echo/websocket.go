package echo

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Bounds of the websocket echo, so that a test that forgets its client ends anyway.
const (
	wsMaxMessages = 10000
	wsIdleLimit   = 2 * time.Minute
	wsMaxMessage  = 1 << 20
)

// handleWebSocket is the websocket echo of /ws: every message comes back as it was sent
// (text or binary); with ?close_after=N it sends a close frame (1000, "bye") after echoing N
// messages and closes its side once the client answered the close (or after a second).
// closed counts the connections whose end it saw: a close frame, EOF or a reset from the
// client's side, or its own close_after.
func handleWebSocket(w http.ResponseWriter, r *http.Request, closed *atomic.Int64) {
	closeAfter := -1
	if v := r.URL.Query().Get("close_after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > wsMaxMessages {
			http.Error(w, "close_after must be a count in [0, 10000]", http.StatusBadRequest)
			return
		}
		closeAfter = n
	}
	// Upgrade answers a request that is not a websocket handshake with 400 itself.
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	hdr := http.Header{}
	if v := w.Header().Get("x-upstream"); v != "" {
		hdr.Set("x-upstream", v)
	}
	conn, err := up.Upgrade(w, r, hdr)
	if err != nil {
		return
	}
	defer conn.Close()
	defer func() {
		if closed != nil {
			closed.Add(1)
		}
	}()
	conn.SetReadLimit(wsMaxMessage)
	for i := 0; i < wsMaxMessages; i++ {
		if i == closeAfter {
			closeGracefully(conn)
			return
		}
		_ = conn.SetReadDeadline(time.Now().Add(wsIdleLimit))
		kind, msg, err := conn.ReadMessage()
		if err != nil {
			return // the client closed (its close frame is answered by gorilla) or went away
		}
		if err := conn.WriteMessage(kind, msg); err != nil {
			return
		}
	}
}

// closeGracefully sends a close frame and waits (bounded) for the client's answer before the
// TCP connection closes, as RFC 6455 7.1.1 asks of a server.
func closeGracefully(conn *websocket.Conn) {
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(time.Second))
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	for i := 0; i < 100; i++ {
		if _, _, err := conn.ReadMessage(); err != nil {
			return
		}
	}
}
