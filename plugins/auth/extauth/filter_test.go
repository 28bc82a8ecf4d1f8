package extauth

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/tb"
)

func TestAllowForwardsRequestAndCopiesUpstreamHeaders(t *testing.T) {
	svc := newAuthService(t)
	cfg, m := newCfg(t, `{"url":"`+svc.URL+`/base/","path_prefix":"/check",
		"allowed_headers":["authorization","x-tenant"],
		"headers_to_add":{"x-auth-key":"k1"},
		"allowed_upstream_headers":["x-user"],
		"consumer_from_header":"x-user"}`)
	req := fakeframework.NewRequest("POST", "/api/items?q=1&r=%2F", "authorization", "Bearer good", "x-tenant", "t1", "cookie", "s=secret", "x-user", "spoofed")
	ctx, st := do(t, cfg, req, nil)
	if st != api.Continue {
		t.Fatalf("denied: %+v", ctx.Replied)
	}
	got := svc.lastSeen()
	if got.Method != "POST" || got.URI != "/base/check/api/items?q=1&r=%2F" {
		t.Fatalf("check request %s %s", got.Method, got.URI)
	}
	for k, v := range map[string]string{
		"Authorization": "Bearer good", "X-Tenant": "t1", "X-Auth-Key": "k1",
		"X-Forwarded-Method": "POST", "X-Forwarded-Uri": "/api/items?q=1&r=%2F", "X-Forwarded-Host": "example.com", "X-Forwarded-Proto": "http",
	} {
		if got.Header.Get(k) != v {
			t.Errorf("service got %s=%q, want %q", k, got.Header.Get(k), v)
		}
	}
	if got.Header.Get("Cookie") != "" {
		t.Error("header outside allowed_headers forwarded")
	}
	if v, _ := req.Get("x-user"); v != "alice" {
		t.Errorf("x-user upstream = %q", v)
	}
	if _, ok := req.Get("x-internal"); ok {
		t.Error("header outside allowed_upstream_headers copied")
	}
	if ctx.Consumer() == nil || ctx.Consumer().Name != "alice" {
		t.Errorf("consumer %+v", ctx.Consumer())
	}
	if v, _ := req.Get("x-consumer-name"); v != "alice" {
		t.Errorf("x-consumer-name %q", v)
	}
	if m.Count("allowed") != 1 {
		t.Error("allowed metric")
	}
}

func TestDenyRelaysStatusBodyAndHeaders(t *testing.T) {
	svc := newAuthService(t)
	cfg, m := newCfg(t, `{"url":"`+svc.URL+`"}`)
	ctx, _ := do(t, cfg, withAuth("Bearer bad"), nil)
	r := ctx.Replied
	if r.Code != 401 || r.Body != "denied by service" {
		t.Fatalf("reply %d %q", r.Code, r.Body)
	}
	if v, _ := r.Headers.Get("www-authenticate"); v != `Bearer realm="svc"` {
		t.Fatalf("www-authenticate %q", v)
	}
	if v, _ := r.Headers.Get("x-extra"); v != "e" {
		t.Fatal("all headers relayed by default")
	}
	if _, ok := r.Headers.Get("content-length"); ok {
		t.Fatal("content-length relayed")
	}
	if m.Count("denied") != 1 {
		t.Fatal("denied metric")
	}

	// allowed_client_headers restricts the relayed headers.
	cfg2, _ := newCfg(t, `{"url":"`+svc.URL+`","allowed_client_headers":["www-authenticate"]}`)
	ctx, _ = do(t, cfg2, withAuth("Bearer bad"), nil)
	if _, ok := ctx.Replied.Headers.Get("x-extra"); ok {
		t.Fatal("x-extra relayed although not allowed")
	}
	if _, ok := ctx.Replied.Headers.Get("www-authenticate"); !ok {
		t.Fatal("www-authenticate not relayed")
	}

	// max_response_body caps the relayed body.
	cfg3, _ := newCfg(t, `{"url":"`+svc.URL+`","max_response_body":6}`)
	ctx, _ = do(t, cfg3, withAuth("Bearer bad"), nil)
	if ctx.Replied.Body != "denied" {
		t.Fatalf("body %q", ctx.Replied.Body)
	}
}

func TestSpoofedUpstreamHeadersAreRemoved(t *testing.T) {
	svc := newAuthService(t)
	cfg, _ := newCfg(t, `{"url":"`+svc.URL+`","allowed_upstream_headers":["x-user","x-role"]}`)
	req := withAuth("Bearer good")
	req.Set("x-role", "admin")
	do(t, cfg, req, nil)
	if _, ok := req.Get("x-role"); ok {
		t.Fatal("client-supplied x-role kept although the service did not send it")
	}
}

func TestTimeoutWithSlowService(t *testing.T) {
	svc := newAuthService(t)
	cfg, m := newCfg(t, `{"url":"`+svc.URL+`","timeout":"50ms"}`)
	start := time.Now()
	ctx, _ := do(t, cfg, withAuth("Bearer slow"), nil)
	if el := time.Since(start); el > 400*time.Millisecond {
		t.Fatalf("took %s with a 50ms timeout", el)
	}
	if r := ctx.Replied; r.Code != 403 || strings.Contains(r.Body, "slow") {
		t.Fatalf("reply %d %q", r.Code, r.Body)
	}
	if m.Count("timeout") != 1 || m.Count("error") != 0 {
		t.Fatalf("timeout=%d error=%d", m.Count("timeout"), m.Count("error"))
	}
	tb.Eventually(t, "service sees the cancel", func() bool { return svc.canceled.Load() == 1 })
}

func TestDeadServiceFailClosedAndOpen(t *testing.T) {
	url := deadURL(t)
	closed, m := newCfg(t, `{"url":"`+url+`","status_on_error":503}`)
	ctx, _ := do(t, closed, withAuth("Bearer good"), nil)
	if r := ctx.Replied; r.Code != 503 || r.Body != "authorization service unavailable\n" {
		t.Fatalf("fail closed: %d %q", r.Code, r.Body)
	}
	if m.Count("error") != 1 {
		t.Fatal("error metric")
	}

	open, m2 := newCfg(t, `{"url":"`+url+`","failure_mode_allow":true,"failure_mode_allow_header_add":true,"allowed_upstream_headers":["x-user"]}`)
	req := withAuth("Bearer good")
	req.Set("x-user", "spoofed")
	ctx, st := do(t, open, req, nil)
	if st != api.Continue {
		t.Fatalf("fail open denied: %+v", ctx.Replied)
	}
	if v, _ := req.Get("x-envoy-auth-failure-mode-allowed"); v != "true" {
		t.Fatal("failure mode header missing")
	}
	if _, ok := req.Get("x-user"); ok {
		t.Fatal("spoofed x-user kept on fail open")
	}
	if m2.Count("failure_mode_allowed") != 1 || m2.Count("error") != 1 {
		t.Fatal("metrics")
	}

	// A service that drops the connection is an error too.
	svc := newAuthService(t)
	cfg, m3 := newCfg(t, `{"url":"`+svc.URL+`"}`)
	ctx, _ = do(t, cfg, withAuth("Bearer drop"), nil)
	if ctx.Replied.Code != 403 || m3.Count("error") != 1 {
		t.Fatal("dropped connection not handled as error")
	}
}

func TestClientGoneCancelsCheck(t *testing.T) {
	svc := newAuthService(t)
	cfg, _ := newCfg(t, `{"url":"`+svc.URL+`","timeout":"5s"}`)
	req := withAuth("Bearer slow")
	ctx := fakeframework.NewContext("ext-auth", req)
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx.Context = cctx
	time.AfterFunc(30*time.Millisecond, cancel)
	start := time.Now()
	(&filter{rt: cfg.rt}).OnReceive(ctx, req, nil, nil)
	if el := time.Since(start); el > 400*time.Millisecond {
		t.Fatalf("check kept going %s after the client left", el)
	}
	tb.Eventually(t, "service sees the cancel", func() bool { return svc.canceled.Load() == 1 })
}

func TestCacheHitsAllowAndDenyButNotErrors(t *testing.T) {
	svc := newAuthService(t)
	cfg, m := newCfg(t, `{"url":"`+svc.URL+`","cache":{"ttl":"1m"},"allowed_upstream_headers":["x-user"]}`)
	for i := 0; i < 3; i++ {
		req := withAuth("Bearer good")
		if _, st := do(t, cfg, req, nil); st != api.Continue {
			t.Fatal("denied")
		}
		if v, _ := req.Get("x-user"); v != "alice" {
			t.Fatal("cached result lost upstream headers")
		}
	}
	for i := 0; i < 2; i++ {
		ctx, _ := do(t, cfg, withAuth("Bearer bad"), nil)
		if ctx.Replied.Code != 401 || ctx.Replied.Body != "denied by service" {
			t.Fatal("cached deny")
		}
	}
	if svc.calls.Load() != 2 || m.Count("cache_hit") != 3 {
		t.Fatalf("calls=%d cache_hit=%d", svc.calls.Load(), m.Count("cache_hit"))
	}
	// Another path is another key (key_includes_path is the default).
	do(t, cfg, fakeframework.NewRequest("GET", "/other", "authorization", "Bearer good"), nil)
	if svc.calls.Load() != 3 {
		t.Fatal("path not part of the key")
	}
	// Errors are not cached: every attempt reaches the service (Go's transport
	// may retry an idempotent request once on a reused connection).
	for i := 0; i < 2; i++ {
		before := svc.calls.Load()
		do(t, cfg, withAuth("Bearer drop"), nil)
		if svc.calls.Load() == before {
			t.Fatalf("error cached (attempt %d)", i)
		}
	}
}

func TestCacheTTLAndBound(t *testing.T) {
	svc := newAuthService(t)
	cfg, _ := newCfg(t, `{"url":"`+svc.URL+`","cache":{"ttl":"40ms","max_entries":2,"key_includes_path":false}}`)
	do(t, cfg, withAuth("Bearer good"), nil)
	do(t, cfg, withAuth("Bearer good"), nil)
	if svc.calls.Load() != 1 {
		t.Fatal("no hit")
	}
	time.Sleep(60 * time.Millisecond)
	do(t, cfg, withAuth("Bearer good"), nil)
	if svc.calls.Load() != 2 {
		t.Fatal("expired entry served")
	}
	for _, v := range []string{"Bearer a", "Bearer b", "Bearer c"} {
		do(t, cfg, withAuth(v), nil)
	}
	if n := cfg.rt.cache.lru.Len(); n != 2 {
		t.Fatalf("cache holds %d entries, bound is 2", n)
	}
}

func TestBodyForwardingLimit(t *testing.T) {
	svc := newAuthService(t)
	partial, _ := newCfg(t, `{"url":"`+svc.URL+`","with_request_body":{"max_request_bytes":10,"allow_partial_message":true}}`)
	if n := partial.Needs(); n.RequestBody != api.WholeBody || n.MaxRequestBody != 0 || n.MayBlock != api.BlockReceive {
		t.Fatalf("needs %+v", n)
	}
	do(t, partial, withAuth("Bearer good"), api.NewBufferString("0123456789abcdef"))
	got := svc.lastSeen()
	if got.Body != "0123456789" || got.Header.Get("X-Envoy-Auth-Partial-Body") != "true" || got.Header.Get("Content-Length") != "10" {
		t.Fatalf("service got body %q headers %v", got.Body, got.Header)
	}
	do(t, partial, withAuth("Bearer good"), api.NewBufferString("short"))
	if got := svc.lastSeen(); got.Body != "short" || got.Header.Get("X-Envoy-Auth-Partial-Body") != "" {
		t.Fatalf("short body: %q", got.Body)
	}

	whole, m := newCfg(t, `{"url":"`+svc.URL+`","with_request_body":{"max_request_bytes":10}}`)
	if n := whole.Needs(); n.MaxRequestBody != 10 {
		t.Fatalf("needs %+v", n)
	}
	calls := svc.calls.Load()
	ctx, _ := do(t, whole, withAuth("Bearer good"), api.NewBufferString("0123456789abcdef"))
	if ctx.Replied.Code != 413 || svc.calls.Load() != calls || m.Count("denied_body_too_large") != 1 {
		t.Fatal("oversized body not refused with 413")
	}

	none, _ := newCfg(t, `{"url":"`+svc.URL+`"}`)
	if n := none.Needs(); n.RequestBody != api.HeadersOnly {
		t.Fatal("body buffered without with_request_body")
	}
}

func TestConnectionsAreReusedAndClosedOnDestroy(t *testing.T) {
	svc := newAuthService(t)
	cfg, _, err := tryConfig(`{"url":"` + svc.URL + `"}`)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		do(t, cfg, withAuth("Bearer good"), nil)
		do(t, cfg, withAuth("Bearer bad"), nil)
	}
	if n := svc.newConns.Load(); n != 1 {
		t.Fatalf("%d connections for 40 sequential checks", n)
	}
	cfg.Destroy()
	tb.Eventually(t, "idle connection closed", func() bool { return svc.closed.Load() == 1 })
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, cfg, field string }{
		{"no url", `{}`, "url"},
		{"relative url", `{"url":"/auth"}`, "url"},
		{"credentials in url", `{"url":"http://u:p@127.0.0.1"}`, "url"},
		{"bad prefix", `{"url":"http://a","path_prefix":"x"}`, "path_prefix"},
		{"timeout", `{"url":"http://a","timeout":"0s"}`, "timeout"},
		{"bad header", `{"url":"http://a","allowed_headers":["a b"]}`, "allowed_headers[0]"},
		{"framing header to the service", `{"url":"http://a","allowed_headers":["authorization","Content-Length"]}`, "allowed_headers[1]"},
		{"hop-by-hop header upstream", `{"url":"http://a","allowed_upstream_headers":["transfer-encoding"]}`, "allowed_upstream_headers[0]"},
		{"host header to the client", `{"url":"http://a","allowed_client_headers":["host"]}`, "allowed_client_headers[0]"},
		{"crlf value", `{"url":"http://a","headers_to_add":{"x":"a\r\nb: c"}}`, "headers_to_add.x"},
		{"body limit", `{"url":"http://a","with_request_body":{}}`, "with_request_body.max_request_bytes"},
		{"status", `{"url":"http://a","status_on_error":42}`, "status_on_error"},
		{"cache size", `{"url":"http://a","cache":{"ttl":"1s","max_entries":0}}`, "cache.max_entries"},
		{"negative cache ttl", `{"url":"http://a","cache":{"ttl":"-1s"}}`, "cache.ttl"},
		{"response body cap", `{"url":"http://a","max_response_body":2000000}`, "max_response_body"},
		{"idle connections", `{"url":"http://a","max_idle_connections":-1}`, "max_idle_connections"},
		{"timeout too long", `{"url":"http://a","timeout":"2m"}`, "timeout"},
		{"consumer header name", `{"url":"http://a","consumer_from_header":"x user"}`, "consumer_from_header"},
		{"unknown field", `{"url":"http://a","failure_mode":true}`, "failure_mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tryConfig(tc.cfg)
			fe, ok := err.(*api.FieldError)
			if !ok || fe.Field != tc.field {
				t.Fatalf("err %v, want field %s", err, tc.field)
			}
		})
	}
}

// Many concurrent checks through one client and one cache (run with -race).
func TestConcurrentChecksWithCache(t *testing.T) {
	svc := newAuthService(t)
	cfg, m := newCfg(t, `{"url":"`+svc.URL+`","cache":{"ttl":"1m","max_entries":4},"allowed_upstream_headers":["x-user"]}`)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				auth := "Bearer good"
				if (g+i)%3 == 0 {
					auth = "Bearer bad"
				}
				req := fakeframework.NewRequest("GET", "/p/"+strconv.Itoa(i%6), "authorization", auth)
				ctx := fakeframework.NewContext("ext-auth", req)
				st := (&filter{rt: cfg.rt}).OnReceive(ctx, req, nil, nil)
				if (auth == "Bearer good") != (st == api.Continue) {
					t.Errorf("%s: status %v", auth, st)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if m.Count("allowed")+m.Count("denied") != 240 {
		t.Fatalf("allowed+denied = %d", m.Count("allowed")+m.Count("denied"))
	}
}

// consumer_header is ext-auth's to fill: the consumer the service named,
// else the one an earlier auth plugin established, else nothing; never the
// client's value.
func TestConsumerHeaderWhenTheServiceNamesNoConsumer(t *testing.T) {
	svc := newAuthService(t)
	dead := deadURL(t)
	for _, tc := range []struct {
		name, cfg, auth string
		earlier         *api.Consumer
		want            string // "" = header absent
		wantConsumer    string
	}{
		{"service names the consumer", `{"url":"` + svc.URL + `","consumer_from_header":"x-user"}`, "Bearer good", &api.Consumer{Name: "bob"}, "alice", "alice"},
		{"service names none, earlier consumer kept", `{"url":"` + svc.URL + `"}`, "Bearer good", &api.Consumer{Name: "bob"}, "bob", "bob"},
		{"service names none, no earlier consumer", `{"url":"` + svc.URL + `"}`, "Bearer good", nil, "", ""},
		{"consumer header absent in the answer", `{"url":"` + svc.URL + `","consumer_from_header":"x-none"}`, "Bearer good", nil, "", ""},
		{"fail open keeps the earlier consumer", `{"url":"` + dead + `","failure_mode_allow":true}`, "Bearer good", &api.Consumer{Name: "bob"}, "bob", "bob"},
		{"fail open without a consumer", `{"url":"` + dead + `","failure_mode_allow":true,"consumer_from_header":"x-user"}`, "Bearer good", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := newCfg(t, tc.cfg)
			req := withAuth(tc.auth)
			req.Set("x-consumer-name", "spoofed")
			ctx := fakeframework.NewContext(Name, req)
			if tc.earlier != nil {
				ctx.SetConsumer(tc.earlier)
			}
			if st := cfg.filter.OnReceive(ctx, req, nil, nil); st != api.Continue {
				t.Fatalf("denied: %+v", ctx.Replied)
			}
			got, ok := req.Get("x-consumer-name")
			if tc.want == "" && ok || tc.want != "" && got != tc.want {
				t.Fatalf("x-consumer-name %q (present %v), want %q", got, ok, tc.want)
			}
			if c := ctx.Consumer(); (c == nil) != (tc.wantConsumer == "") || c != nil && c.Name != tc.wantConsumer {
				t.Fatalf("consumer %+v, want %q", c, tc.wantConsumer)
			}
		})
	}
}
