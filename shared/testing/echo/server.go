package echo

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// Server is an echo upstream started by a test on 127.0.0.1.
type Server struct {
	Name string
	Port int
	URL  string // http://127.0.0.1:<port>
	// Requests counts the requests it received (also those it is still answering).
	Requests atomic.Int64
	// Abandoned counts /delay requests whose client went away before the answer (for example
	// a proxy that reset its upstream request).
	Abandoned atomic.Int64
	// WebSocketClosed counts /ws connections that ended (the client closed or went away, or
	// the upstream closed after close_after).
	WebSocketClosed atomic.Int64
}

// Start runs an echo upstream named name on a free loopback port until the test ends.
func Start(t tb.TB, name string) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("echo upstream %s: %v", name, err)
	}
	s := &Server{Name: name, Port: l.Addr().(*net.TCPAddr).Port}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", s.Port)
	h := newHandler(name, &s.Abandoned, &s.WebSocketClosed)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return s
}
