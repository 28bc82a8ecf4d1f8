package mirror

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// recorder is a mirror target that records what it receives.
type recorder struct {
	mu   sync.Mutex
	got  []recorded
	srv  *httptest.Server
	hold chan struct{} // when set, answers wait for it
}

type recorded struct {
	method, uri, host, body string
	header                  http.Header
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, recorded{req.Method, req.RequestURI, req.Host, string(b), req.Header.Clone()})
		hold := r.hold
		r.mu.Unlock()
		if hold != nil {
			<-hold
		}
		w.WriteHeader(201)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) wait(t *testing.T, n int) []recorded {
	t.Helper()
	var got []recorded
	if !tb.Poll(5*time.Second, func() bool {
		r.mu.Lock()
		got = append([]recorded(nil), r.got...)
		r.mu.Unlock()
		return len(got) >= n
	}) {
		t.Fatalf("mirror target got %d requests, want %d", len(got), n)
	}
	return got
}

func parse(t *testing.T, js string) (*Config, *fakeframework.Env) {
	t.Helper()
	c, env := fakeframework.MustParse[*Config](t, Name, newConfig, js)
	t.Cleanup(c.Destroy)
	return c, env
}

// send runs one request through a new filter: headers, then the body chunks.
func send(c *Config, method, path string, body []string, kv ...string) *fakeframework.Context {
	req := fakeframework.NewRequest(method, path, kv...)
	ctx := fakeframework.NewContext(Name, req)
	f := &filter{c: c}
	f.OnReceive(ctx, req, nil, nil)
	for i, chunk := range body {
		f.OnReceiveData(ctx, api.NewBufferString(chunk), i == len(body)-1)
	}
	return ctx
}

func TestCopiesKeepMethodPathHeadersAndBody(t *testing.T) {
	r := newRecorder(t)
	c, env := parse(t, `{"targets": [{"name": "shadow", "url": "`+r.srv.URL+`"}]}`)
	send(c, "GET", "/orders?id=7", nil, "x-user", "alice", "connection", "keep-alive")
	send(c, "POST", "/orders", []string{`{"item":`, ` 1}`}, "content-length", "12", "content-type", "application/json")
	got := r.wait(t, 2)
	byMethod := map[string]recorded{}
	for _, g := range got {
		byMethod[g.method] = g
	}
	g := byMethod["GET"]
	if g.uri != "/orders?id=7" || g.host != "example.com-shadow" || g.header.Get("user-agent") != "" || g.header.Get("x-user") != "alice" || g.header.Get("connection") != "" || g.body != "" {
		t.Fatalf("GET copy: %+v", g)
	}
	p := byMethod["POST"]
	if p.body != `{"item": 1}` || p.header.Get("content-type") != "application/json" {
		t.Fatalf("POST copy: %+v", p)
	}
	tb.Eventually(t, "response_2xx", func() bool { return env.Count("shadow_response_2xx") == 2 })
	if env.Count("shadow_selected") != 2 {
		t.Fatalf("metrics %v", env.Values())
	}
}

func TestMatchAndPercentageSelect(t *testing.T) {
	r1, r2 := newRecorder(t), newRecorder(t)
	c, env := parse(t, `{"targets": [
		{"name": "api", "url": "`+r1.srv.URL+`", "match": {"path": {"prefix": "/api/"}, "methods": ["GET"]}},
		{"name": "quarter", "url": "`+r2.srv.URL+`", "percentage": 25}]}`)
	const n = 2000
	for i := 0; i < n; i++ {
		path := "/web"
		if i%2 == 0 {
			path = "/api/x"
		}
		send(c, "GET", path, nil)
	}
	send(c, "DELETE", "/api/x", nil)
	if got := env.Count("api_selected"); got != n/2 {
		t.Fatalf("api selected %d, want %d", got, n/2)
	}
	if got := env.Count("quarter_selected"); got < n/4-90 || got > n/4+90 {
		t.Fatalf("25%% of %d: %d", n, got)
	}
	// Each selected copy was sent or dropped (a queue of 256 against a
	// tight loop of 1000).
	tb.Eventually(t, "every copy accounted for", func() bool {
		return env.Count("api_response_2xx")+env.Count("api_dropped") == n/2
	})
	c, env = parse(t, `{"targets": [{"name": "none", "url": "`+r1.srv.URL+`", "percentage": 0}]}`)
	for i := 0; i < 100; i++ {
		send(c, "GET", "/", nil)
	}
	if env.Count("none_selected") != 0 {
		t.Fatal("percentage 0 selected requests")
	}
}

func TestBodiesOverTheLimitAreNotMirrored(t *testing.T) {
	r := newRecorder(t)
	c, env := parse(t, `{"max_body": 8, "targets": [{"name": "t", "url": "`+r.srv.URL+`"}]}`)
	send(c, "POST", "/big", []string{"0123456789"}, "content-length", "10") // known too large
	send(c, "POST", "/chunked", []string{"01234", "56789"})                 // found too large while streaming
	send(c, "POST", "/small", []string{"0123", "4567"})                     // exactly the limit, no content-length
	send(c, "PUT", "/empty", nil, "content-length", "0")
	got := r.wait(t, 2)
	time.Sleep(50 * time.Millisecond)
	if len(r.wait(t, 2)) != 2 || env.Count("t_skipped_body") != 2 {
		t.Fatalf("copies %v, skipped %d", got, env.Count("t_skipped_body"))
	}
	c, env = parse(t, `{"max_body": 0, "targets": [{"name": "t", "url": "`+r.srv.URL+`"}]}`)
	if c.Needs().RequestBody != api.HeadersOnly {
		t.Fatal("max_body 0 still streams bodies")
	}
	send(c, "POST", "/x", nil, "content-length", "3")
	send(c, "GET", "/y", nil)
	r.wait(t, 3)
	if env.Count("t_skipped_body") != 1 {
		t.Fatalf("skipped %d", env.Count("t_skipped_body"))
	}
}

func TestAFullQueueDropsAndTheRequestGoesOn(t *testing.T) {
	r := newRecorder(t)
	r.hold = make(chan struct{})
	defer close(r.hold)
	c, env := parse(t, `{"workers": 1, "queue_size": 2, "timeout": "10s", "targets": [{"name": "t", "url": "`+r.srv.URL+`"}]}`)
	start := time.Now()
	for i := 0; i < 10; i++ {
		if ctx := send(c, "GET", "/", nil); ctx.Replied != nil {
			t.Fatalf("the request was answered: %+v", ctx.Replied)
		}
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("10 requests took %v with a stalled target", d)
	}
	r.wait(t, 1) // the one worker holds the first copy
	// 1 in flight, 2 queued, the other 7 dropped (the first may still have
	// been queued when the second came: 7 or 8... never fewer than 7).
	if d := env.Count("t_dropped"); d < 7 || d > 8 {
		t.Fatalf("dropped %d of 10", d)
	}
}

func TestDownAndStalledTargets(t *testing.T) {
	// A closed port: connection refused, counted as failed.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	c, env := parse(t, `{"timeout": "100ms", "targets": [{"name": "down", "url": "`+deadURL+`"}]}`)
	send(c, "GET", "/", nil)
	tb.Eventually(t, "down_failed", func() bool { return env.Count("down_failed") == 1 })
	// A target that never answers: timeout.
	r := newRecorder(t)
	r.hold = make(chan struct{})
	defer close(r.hold)
	c, env = parse(t, `{"timeout": "50ms", "targets": [{"name": "stall", "url": "`+r.srv.URL+`"}]}`)
	send(c, "GET", "/", nil)
	tb.Eventually(t, "stall_timeout", func() bool { return env.Count("stall_timeout") == 1 })
}

func TestDestroyStopsTheWorkers(t *testing.T) {
	r := newRecorder(t)
	r.hold = make(chan struct{})
	defer close(r.hold)
	c, env := fakeframework.MustParse[*Config](t, Name, newConfig, `{"workers": 2, "timeout": "1m", "targets": [{"name": "t", "url": "`+r.srv.URL+`"}]}`)
	send(c, "GET", "/", nil)
	r.wait(t, 1)
	c.Destroy()
	done := make(chan struct{})
	go func() { c.targets[0].pool.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("workers still running after Destroy")
	}
	send(c, "GET", "/", nil) // after Destroy: dropped, not sent
	if env.Count("t_dropped") != 1 {
		t.Fatalf("dropped %d", env.Count("t_dropped"))
	}
	c.Destroy()
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "targets", "is required"},
		{`{"targets": [{"name": "Shadow", "url": "http://127.0.0.1:1"}]}`, "targets[0].name", "lower case"},
		{`{"targets": [{"name": "a", "url": "http://127.0.0.1:1"}, {"name": "a", "url": "http://127.0.0.1:2"}]}`, "targets[1].name", "also targets[0]"},
		{`{"targets": [{"name": "a", "url": "127.0.0.1:1"}]}`, "targets[0].url", "http(s)://host"},
		{`{"targets": [{"name": "a", "url": "http://127.0.0.1:1/path"}]}`, "targets[0].url", "without path"},
		{`{"targets": [{"name": "a", "url": "http://127.0.0.1:1", "percentage": 101}]}`, "targets[0].percentage", "between 0 and 100"},
		{`{"targets": [{"name": "a", "url": "http://127.0.0.1:1", "match": {"path": {"regex": "("}}}]}`, "targets[0].match.path", "regex"},
		{`{"targets": [{"name": "a", "url": "http://127.0.0.1:1"}], "workers": 0}`, "workers", "between 1 and 1024"},
		{`{"targets": [{"name": "a", "url": "http://127.0.0.1:1"}], "queue_size": -1}`, "queue_size", "between"},
		{`{"targets": [{"name": "a", "url": "http://127.0.0.1:1"}], "max_body": -1}`, "max_body", "between"},
		{`{"targets": [{"name": "a", "url": "http://127.0.0.1:1"}], "timeout": "0s"}`, "timeout", "between"},
		{`{"targets": [{"name": "a", "url": "http://127.0.0.1:1"}], "host_suffix": "a b"}`, "host_suffix", "printable"},
		{`{"targets": [{"name": "a", "url": "http://127.0.0.1:1", "weight": 1}]}`, "targets[0].weight", "unknown field"},
	} {
		t.Run(tc.field+" "+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
			fakeframework.WantCheckError(t, Name, tc.config, tc.field, tc.reason) // moectl validate
		})
	}
	_ = strings.Contains
}
