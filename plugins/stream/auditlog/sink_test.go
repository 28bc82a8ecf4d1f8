package auditlog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// collector is a loopback HTTP audit collector that keeps what it receives.
type collector struct {
	mu      sync.Mutex
	posts   int
	records []string
	headers []http.Header
	srv     *httptest.Server
}

func newCollector(t *testing.T, status int, hang <-chan struct{}) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang != nil {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.posts++
		c.headers = append(c.headers, r.Header.Clone())
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			c.records = append(c.records, sc.Text())
		}
		c.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) snapshot() (int, []string, []http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.posts, append([]string(nil), c.records...), c.headers
}

func logN(c *Config, n int) time.Duration {
	start := time.Now()
	for i := 0; i < n; i++ {
		ctx := request(fmt.Sprintf("/r/%d", i))
		(*filter)(c).Log(ctx, ctx.Req, nil, ctx.Receiver().RequestInfo())
	}
	return time.Since(start)
}

func httpConfig(url, extra string) string {
	return fmt.Sprintf(`{"sink": {"type": "http", "url": %q, "headers": {"authorization": "Bearer collector-token"}, "timeout": "200ms", "batch_size": 10, "batch_interval": "50ms"%s}, "queue_size": 50}`, url, extra)
}

func TestHTTPSinkPostsBatchesOfRecords(t *testing.T) {
	col := newCollector(t, 204, nil)
	c, env := fakeframework.MustParse[*Config](t, Name, newConfig, httpConfig(col.srv.URL+"/audit", ""))
	logN(c, 25)
	c.Destroy() // flushes
	posts, recs, hdrs := col.snapshot()
	if len(recs) != 25 || posts < 3 || env.Count("records") != 25 {
		t.Fatalf("%d records in %d posts, metric %d", len(recs), posts, env.Count("records"))
	}
	if r := decode(t, recs[24]); r.What["path"] != "/r/24" || r.What["route"] != "orders" {
		t.Fatalf("last record %q", recs[24])
	}
	if hdrs[0].Get("authorization") != "Bearer collector-token" || hdrs[0].Get("content-type") != "application/x-ndjson" {
		t.Fatalf("post headers %v", hdrs[0])
	}
}

// A collector that is down, answers errors or hangs costs the request path
// nothing: Log only queues. Lost records are counted.
func TestHTTPSinkFailuresCostRequestsNothing(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	for _, tc := range []struct {
		name string
		url  string
		hang bool
	}{
		{"down", fmt.Sprintf("http://127.0.0.1:%d/audit", hosttest.ClosedPort(t)), false},
		{"answers 503", newCollector(t, 503, nil).srv.URL, false},
		{"hangs past the timeout", newCollector(t, 200, hang).srv.URL, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := fakeframework.MustParse[*Config](t, Name, newConfig, httpConfig(tc.url, `, "flush_timeout": "2s"`))
			if d := logN(c, 500); d > 200*time.Millisecond {
				t.Errorf("500 log calls took %v", d)
			}
			c.Destroy()
			lost := env.Count("failed") + env.Count("dropped")
			if env.Count("records") != 0 || lost != 500 || env.Count("failed") == 0 {
				t.Fatalf("metrics %v", env.Values())
			}
			// The queue holds 50: with a hanging collector most of the 500 were
			// dropped, not waited for.
			if tc.hang && env.Count("dropped") < 400 {
				t.Fatalf("dropped %d", env.Count("dropped"))
			}
		})
	}
}
