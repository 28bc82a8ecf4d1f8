package extauth

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// logCtx records what a plugin logs through ctx.Log().
type logCtx struct {
	*fakeframework.Context
	mu    sync.Mutex
	lines []string
}

func (c *logCtx) Log() api.Logger { return c }
func (c *logCtx) add(f string, a ...any) {
	c.mu.Lock()
	c.lines = append(c.lines, fmt.Sprintf(f, a...))
	c.mu.Unlock()
}
func (c *logCtx) Debugf(f string, a ...any) { c.add(f, a...) }
func (c *logCtx) Infof(f string, a ...any)  { c.add(f, a...) }
func (c *logCtx) Warnf(f string, a ...any)  { c.add(f, a...) }
func (c *logCtx) Errorf(f string, a ...any) { c.add(f, a...) }

// A failed check is logged with the service URL and the network reason, never
// with the client's path or query, which may carry credentials.
func TestServiceFailureLogNeverHoldsRequestPathOrQuery(t *testing.T) {
	svc := newAuthService(t)
	for _, tc := range []struct {
		name, url, auth string
	}{
		{"connection refused", deadURL(t), "Bearer good"},
		{"connection dropped", svc.URL, "Bearer drop"},
		{"timeout", svc.URL, "Bearer slow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := newCfg(t, `{"url":"`+tc.url+`","path_prefix":"/authz","timeout":"50ms"}`)
			req := fakeframework.NewRequest("GET", "/private/alice-secret-path?access_token=SECRET-TOKEN", "authorization", tc.auth)
			ctx := &logCtx{Context: fakeframework.NewContext("ext-auth", req)}
			if st := (&filter{rt: cfg.rt}).OnReceive(ctx, req, nil, nil); st != api.Stop {
				t.Fatalf("status %v, want a fail-closed reply", st)
			}
			if len(ctx.lines) == 0 {
				t.Fatal("failure not logged")
			}
			for _, l := range ctx.lines {
				if strings.Contains(l, "SECRET-TOKEN") || strings.Contains(l, "alice-secret-path") {
					t.Errorf("log line leaks the request target: %s", l)
				}
				if !strings.Contains(l, tc.url+"/authz") {
					t.Errorf("log line does not name the service: %s", l)
				}
			}
		})
	}
}

// The cache key covers everything the check request carries that the service
// may decide on: a cached answer for one host, scheme or body is not replayed
// for another.
func TestCacheKeyCoversHostSchemeAndBody(t *testing.T) {
	svc := newAuthService(t)
	for _, tc := range []struct {
		name        string
		cfg         string
		first, then func() (*fakeframework.Request, api.Buffer)
	}{
		{"other host", `{"cache":{"ttl":"1m"}}`,
			func() (*fakeframework.Request, api.Buffer) { return withAuth("Bearer good"), nil },
			func() (*fakeframework.Request, api.Buffer) {
				r := withAuth("Bearer good")
				_ = r.SetHost("admin.example.com")
				return r, nil
			}},
		{"other host without path in key", `{"cache":{"ttl":"1m","key_includes_path":false}}`,
			func() (*fakeframework.Request, api.Buffer) { return withAuth("Bearer good"), nil },
			func() (*fakeframework.Request, api.Buffer) {
				r := withAuth("Bearer good")
				_ = r.SetHost("admin.example.com")
				return r, nil
			}},
		{"other scheme", `{"cache":{"ttl":"1m"}}`,
			func() (*fakeframework.Request, api.Buffer) { return withAuth("Bearer good"), nil },
			func() (*fakeframework.Request, api.Buffer) {
				r := withAuth("Bearer good")
				_ = r.Set(":scheme", "https")
				return r, nil
			}},
		{"other body", `{"cache":{"ttl":"1m"},"with_request_body":{"max_request_bytes":64}}`,
			func() (*fakeframework.Request, api.Buffer) {
				return withAuth("Bearer good"), api.NewBufferString(`{"amount":1}`)
			},
			func() (*fakeframework.Request, api.Buffer) {
				return withAuth("Bearer good"), api.NewBufferString(`{"amount":1000000}`)
			}},
		{"body versus no body", `{"cache":{"ttl":"1m"},"with_request_body":{"max_request_bytes":64}}`,
			func() (*fakeframework.Request, api.Buffer) { return withAuth("Bearer good"), nil },
			func() (*fakeframework.Request, api.Buffer) {
				return withAuth("Bearer good"), api.NewBufferString("x")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, m := newCfg(t, strings.Replace(tc.cfg, "{", `{"url":"`+svc.URL+`",`, 1))
			before := svc.calls.Load()
			r, b := tc.first()
			do(t, cfg, r, b)
			r, b = tc.first()
			do(t, cfg, r, b) // same request: a hit
			if got := m.Count("cache_hit"); got != 1 {
				t.Fatalf("identical request: cache_hit = %d, want 1", got)
			}
			r, b = tc.then()
			do(t, cfg, r, b)
			if got := svc.calls.Load() - before; got != 2 {
				t.Fatalf("service asked %d times, want 2: the second request was answered from the first one's entry", got)
			}
		})
	}
}
