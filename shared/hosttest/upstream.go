package hosttest

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Echoed is what the echo upstream answers: the request as the upstream saw it.
type Echoed struct {
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Host    string              `json:"host"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"`
}

// Header returns the first value of a request header the upstream received.
func (e Echoed) Header(name string) string {
	v := e.Headers[http.CanonicalHeaderKey(name)]
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// EchoUpstream starts an upstream on 127.0.0.1 that answers every request with its Echoed JSON.
// /status/<code> answers that status; /delay/<ms> sleeps first. It returns the port.
func EchoUpstream(t testing.TB) int {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return l.Addr().(*net.TCPAddr).Port
}

func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	status := http.StatusOK
	if rest, ok := strings.CutPrefix(r.URL.Path, "/status/"); ok {
		if code, err := strconv.Atoi(rest); err == nil {
			status = code
		}
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/delay/"); ok {
		if ms, err := strconv.Atoi(rest); err == nil {
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(Echoed{Method: r.Method, Path: r.URL.RequestURI(), Host: r.Host, Headers: r.Header, Body: string(body)})
}

// DecodeEcho reads an echo upstream response body.
func DecodeEcho(t testing.TB, resp *http.Response) Echoed {
	t.Helper()
	defer resp.Body.Close()
	var e Echoed
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("response is not from the echo upstream (status %d): %q", resp.StatusCode, raw)
	}
	return e
}
