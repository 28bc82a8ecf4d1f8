package mirror_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

type copyRec struct{ method, uri, host, body string }

// shadow is a mirror target recording what reaches it.
type shadow struct {
	mu   sync.Mutex
	got  []copyRec
	port int
}

func startShadow(t *testing.T) *shadow {
	s := &shadow{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, copyRec{r.Method, r.RequestURI, r.Host, string(b)})
		s.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	s.port = srv.Listener.Addr().(*net.TCPAddr).Port
	return s
}

func (s *shadow) copies() []copyRec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// The documented example: /api/ requests are copied (body included) to the
// shadow, a quarter of the GETs to the sampled target, /health to neither.
func TestE2EExample(t *testing.T) {
	sh := startShadow(t)
	sampled := echo.Start(t, "sampled")
	h := hosttest.StartExample(t, "envoy/examples/mirror.yaml", hosttest.ExampleOptions{Replace: map[string]string{
		"127.0.0.1:9002": "127.0.0.1:" + strconv.Itoa(sh.port),
		"127.0.0.1:9003": "127.0.0.1:" + strconv.Itoa(sampled.Port),
	}})
	resp, _ := hosttest.Send(t, "POST", h.URL+"/api/orders?x=1", `{"item": 1}`, "content-type", "application/json")
	if e := hosttest.DecodeEcho(t, resp); resp.StatusCode != 200 || e.Upstream != "upstream" || e.Body != `{"item": 1}` {
		t.Fatalf("original: %d %+v", resp.StatusCode, e)
	}
	tb.Eventually(t, "the shadow copy", func() bool { return len(sh.copies()) == 1 })
	c := sh.copies()[0]
	if c.method != "POST" || c.uri != "/api/orders?x=1" || !strings.HasSuffix(c.host, "-shadow") || c.body != `{"item": 1}` {
		t.Fatalf("copy %+v", c)
	}
	// A chunked body (no content-length) is copied too.
	req, _ := http.NewRequest("POST", h.URL+"/api/chunked", io.NopCloser(strings.NewReader("streamed body")))
	req.ContentLength = -1
	resp, _ = hosttest.Do(t, req)
	resp.Body.Close()
	tb.Eventually(t, "the chunked copy", func() bool { return len(sh.copies()) == 2 })
	if c := sh.copies()[1]; c.body != "streamed body" {
		t.Fatalf("chunked copy %+v", c)
	}
	const gets = 400
	client := &http.Client{Timeout: 5 * time.Second}
	for i := 0; i < gets; i++ {
		if code, _, _ := hosttest.Fetch(t, client, h.URL+"/page"); code != 200 {
			t.Fatalf("GET /page: %d", code)
		}
	}
	hosttest.Fetch(t, client, h.URL+"/health")
	tb.Eventually(t, "sampled copies answered", func() bool {
		return h.Counter(t, "moe_mirror_sampled_response_2xx") == h.Counter(t, "moe_mirror_sampled_selected")
	})
	n := sampled.Requests.Load()
	if n < gets/4-45 || n > gets/4+45 {
		t.Fatalf("25%% of %d GETs: %d copies", gets, n)
	}
	if got := h.Counter(t, "moe_mirror_shadow_response_2xx"); got != 2 || len(sh.copies()) != 2 {
		t.Fatalf("shadow: %d answered, %d received (only /api/ is copied)", got, len(sh.copies()))
	}
}

// stallingListener accepts connections and never answers.
func stallingListener(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return l.Addr().(*net.TCPAddr).Port
}

// The proof that the original never waits for a copy and never fails
// because of one: requests mirrored to a target that accepts and never
// answers and to one that is down take as long as requests on a route
// without the plugin, and all succeed; the stalled target's copies time out
// or are dropped once its queue is full.
func TestE2EStalledAndDownTargetsChangeNothing(t *testing.T) {
	stall, down := stallingListener(t), hosttest.ClosedPort(t)
	h := hosttest.StartChain(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{{Name: "mirror", Config: map[string]any{
			"workers": 2, "queue_size": 4, "timeout": "3s",
			"targets": []map[string]any{
				{"name": "stall", "url": "http://127.0.0.1:" + strconv.Itoa(stall)},
				{"name": "down", "url": "http://127.0.0.1:" + strconv.Itoa(down)},
			},
		}}},
		// /special: the same route without the plugin, the baseline.
		RoutePlugins: []hosttest.Plugin{{Name: "mirror", Disabled: true}},
	})
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	const n = 100
	var mirrored, base []time.Duration
	body := strings.Repeat("b", 1000)
	for i := 0; i < n; i++ {
		for _, path := range []string{"/mirrored", "/special"} {
			t0 := time.Now()
			resp, _ := hosttest.Send(t, "POST", h.URL+path, body)
			d := time.Since(t0)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: status %d", path, resp.StatusCode)
			}
			if e := hosttest.DecodeEcho(t, resp); e.Body != body {
				t.Fatalf("%s: the upstream got %d bytes", path, len(e.Body))
			}
			if path == "/special" {
				base = append(base, d)
			} else {
				mirrored = append(mirrored, d)
			}
		}
	}
	_ = client
	slices.Sort(mirrored)
	slices.Sort(base)
	med := func(s []time.Duration) time.Duration { return s[len(s)/2] }
	p99 := func(s []time.Duration) time.Duration { return s[len(s)*99/100] }
	t.Logf("latency, mirrored to a stalled and a down target vs not mirrored: median %v vs %v, p99 %v vs %v, max %v vs %v",
		med(mirrored), med(base), p99(mirrored), p99(base), mirrored[n-1], base[n-1])
	// A request that waited for its copy would take the 3s timeout.
	if mirrored[n-1] > time.Second {
		t.Errorf("a mirrored request took %v", mirrored[n-1])
	}
	if d := med(mirrored) - med(base); d > 5*time.Millisecond {
		t.Errorf("mirrored median %v vs %v without the plugin", med(mirrored), med(base))
	}
	// Stalled target: 2 copies in flight, 4 queued, the rest dropped.
	if d := h.Counter(t, "moe_mirror_stall_dropped"); d < n-8 {
		t.Errorf("stall dropped %d of %d", d, n)
	}
	// Down target: refused at once, so its copies fail rather than queue up.
	tb.Eventually(t, "down copies", func() bool {
		return h.Counter(t, "moe_mirror_down_failed")+h.Counter(t, "moe_mirror_down_dropped") == n
	})
	if f := h.Counter(t, "moe_mirror_down_failed"); f < n/2 {
		t.Errorf("down: %d failed of %d", f, n)
	}
}
