package extauth

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// seen is a check request as the authorization service got it.
type seen struct {
	Method, URI string
	Header      http.Header
	Body        string
}

// authService is a real HTTP authorization service on 127.0.0.1:
//
//	Authorization "Bearer good"  -> 200, x-user: alice, x-internal: 1
//	Authorization "Bearer slow"  -> waits 500ms (or until the caller gives up), then 200
//	Authorization "Bearer drop"  -> closes the connection without answering
//	anything else                -> 401 with WWW-Authenticate, x-extra and a body
type authService struct {
	*httptest.Server
	calls    atomic.Int64
	newConns atomic.Int64
	closed   atomic.Int64
	canceled atomic.Int64
	mu       sync.Mutex
	last     seen
}

func newAuthService(t testing.TB) *authService {
	s := &authService{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Server.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.newConns.Add(1)
		case http.StateClosed:
			s.closed.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *authService) serve(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.last = seen{Method: r.Method, URI: r.RequestURI, Header: r.Header.Clone(), Body: string(body)}
	s.mu.Unlock()
	switch r.Header.Get("Authorization") {
	case "Bearer good":
		w.Header().Set("x-user", "alice")
		w.Header().Set("x-internal", "1")
		w.WriteHeader(200)
	case "Bearer slow":
		select {
		case <-time.After(500 * time.Millisecond):
			w.WriteHeader(200)
		case <-r.Context().Done():
			s.canceled.Add(1)
		}
	case "Bearer drop":
		if hj, ok := w.(http.Hijacker); ok {
			c, _, _ := hj.Hijack()
			c.Close()
		}
	default:
		w.Header().Set("WWW-Authenticate", `Bearer realm="svc"`)
		w.Header().Set("x-extra", "e")
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(401)
		_, _ = io.WriteString(w, "denied by service")
	}
}

func (s *authService) lastSeen() seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func newCfg(t testing.TB, cfgJSON string) (*Config, *fakeframework.Env) {
	t.Helper()
	cfg, m, err := tryConfig(cfgJSON)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	t.Cleanup(cfg.Destroy)
	return cfg, m
}

func tryConfig(cfgJSON string) (*Config, *fakeframework.Env, error) {
	cfg := newConfig().(*Config)
	if err := config.DecodeStrict([]byte(cfgJSON), cfg); err != nil {
		return nil, nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	m := fakeframework.NewEnv(Name, false)
	if err := cfg.Init(m); err != nil {
		return nil, nil, err
	}
	return cfg, m, nil
}

func do(t testing.TB, cfg *Config, req *fakeframework.Request, body api.Buffer) (*fakeframework.Context, api.Status) {
	t.Helper()
	ctx := fakeframework.NewContext("ext-auth", req)
	st := (&filter{rt: cfg.rt}).OnReceive(ctx, req, body, nil)
	if (st == api.Stop) != (ctx.Replied != nil) {
		t.Fatalf("status %v but reply %+v", st, ctx.Replied)
	}
	return ctx, st
}

func withAuth(v string) *fakeframework.Request {
	return fakeframework.NewRequest("GET", "/api/items?q=1", "authorization", v)
}

func deadURL(t testing.TB) string {
	return fmt.Sprintf("http://127.0.0.1:%d", hosttest.ClosedPort(t))
}
