package fault_test

import (
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

const example = "envoy/examples/fault.yaml"

// The documented example, through moe-host and the real libgolang.so.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, example)

	start := time.Now()
	resp, _ := hosttest.Get(t, h.URL+"/")
	resp.Body.Close()
	if el := time.Since(start); resp.StatusCode != 200 || el > 250*time.Millisecond {
		t.Fatalf("no x-chaos: %d after %v", resp.StatusCode, el)
	}
	start = time.Now()
	resp, _ = hosttest.Get(t, h.URL+"/", "x-chaos", "on")
	resp.Body.Close()
	if el := time.Since(start); resp.StatusCode != 200 || el < 300*time.Millisecond {
		t.Fatalf("x-chaos: on: %d after %v, want a 300ms delay", resp.StatusCode, el)
	}

	resp, body := hosttest.Get(t, h.URL+"/flaky?user=tester")
	if resp.StatusCode != 500 || body != "injected failure\n" || resp.Header.Get("x-fault") != "abort" {
		t.Fatalf("/flaky?user=tester: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, _ = hosttest.Get(t, h.URL+"/flaky?user=alice")
	if e := hosttest.DecodeEcho(t, resp); resp.StatusCode != 200 || e.Path != "/flaky" {
		t.Fatalf("/flaky?user=alice: %d", resp.StatusCode)
	}

	// 25% of /sometimes over 1000 requests: within 5 standard deviations.
	const n = 1000
	counts := fetchMany(t, h.URL+"/sometimes", n, 8)
	if counts[200]+counts[503] != n {
		t.Fatalf("statuses %v", counts)
	}
	want, sd := n*0.25, math.Sqrt(n*0.25*0.75)
	if math.Abs(float64(counts[503])-want) > 5*sd {
		t.Fatalf("503 for %d of %d requests, want %.0f ± %.0f", counts[503], n, want, 5*sd)
	}
	t.Logf("/sometimes (25%%): %d of %d aborted", counts[503], n)

	if got := h.Counter(t, "moe_fault_delays_injected"); got != 1 {
		t.Errorf("delays_injected = %d, want 1", got)
	}
	if got := h.Counter(t, "moe_fault_aborts_injected"); got != int64(1+counts[503]) {
		t.Errorf("aborts_injected = %d, want %d", got, 1+counts[503])
	}
}

// fetchMany GETs url n times from workers keep-alive clients and counts the
// statuses.
func fetchMany(t *testing.T, url string, n, workers int) map[int]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	var next atomic.Int64
	var wg sync.WaitGroup
	c := &http.Client{Timeout: 5 * time.Second}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				code, _, _ := hosttest.Fetch(t, c, url)
				mu.Lock()
				counts[code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return counts
}

// startExample runs the example on one worker thread with upstream up.
func startExample(t *testing.T, up *echo.Server) *hosttest.Host {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(hosttest.RepoRoot(t), example))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := strings.NewReplacer(
		"port_value: 10000", "port_value: {{.Port}}",
		"port_value: 9901", "port_value: {{.AdminPort}}",
		"port_value: 8080", "port_value: {{.UpstreamPort}}",
		"library_path: out/libgolang.so", "library_path: {{.Library}}",
	).Replace(string(raw))
	return hosttest.Start(t, tmpl, hosttest.Vars{"UpstreamPort": up.Port}, hosttest.Options{Concurrency: 1})
}

// Delays never block Envoy's worker thread: with ONE worker, 20 requests
// delayed 300 ms at once all finish after about 300 ms (not 6 s), and
// requests without a fault keep being answered at once meanwhile.
func TestE2EDelaysDoNotBlockTheWorker(t *testing.T) {
	up := echo.Start(t, "upstream")
	h := startExample(t, up)
	const delayed = 20
	var wg sync.WaitGroup
	start := time.Now()
	errs := make(chan string, delayed)
	for i := 0; i < delayed; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _ := hosttest.Fetch(t, &http.Client{Timeout: 5 * time.Second}, h.URL+"/", "x-chaos", "on")
			if el := time.Since(start); code != 200 || el < 300*time.Millisecond {
				errs <- "delayed request: " + http.StatusText(code) + " after " + el.String()
			}
		}()
	}
	// While they wait: the gauge shows them, and other requests pass at once.
	tb.Poll(2*time.Second, func() bool { return h.Counter(t, "moe_fault_active_faults") == delayed })
	if got := h.Counter(t, "moe_fault_active_faults"); got != delayed && time.Since(start) < 300*time.Millisecond {
		t.Errorf("active_faults = %d while %d requests wait", got, delayed)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	for i := 0; i < 5; i++ {
		s := time.Now()
		code, _, _ := hosttest.Fetch(t, c, h.URL+"/")
		if el := time.Since(s); code != 200 || el > 100*time.Millisecond {
			t.Errorf("undelayed request while others wait: %d after %v", code, el)
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Errorf("%d requests delayed 300ms took %v on one worker: delays are serialized", delayed, el)
	}
	if got := h.Counter(t, "moe_fault_active_faults"); got != 0 {
		t.Errorf("active_faults = %d after the requests", got)
	}
}

// A client that gives up during its delay ends the wait: the request never
// reaches the upstream and the fault is no longer active.
func TestE2EClientGoneDuringDelay(t *testing.T) {
	up := echo.Start(t, "upstream")
	h := startExample(t, up)
	c := &http.Client{Timeout: 100 * time.Millisecond}
	req, _ := http.NewRequest("GET", h.URL+"/", nil)
	req.Header.Set("x-chaos", "on")
	if resp, err := c.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t.Fatalf("answered %d within the delay", resp.StatusCode)
	}
	if !tb.Poll(2*time.Second, func() bool { return h.Counter(t, "moe_fault_active_faults") == 0 }) {
		t.Fatalf("active_faults = %d after the client left", h.Counter(t, "moe_fault_active_faults"))
	}
	time.Sleep(400 * time.Millisecond) // past the 300ms delay
	if n := up.Requests.Load(); n != 0 {
		t.Fatalf("the upstream got %d requests", n)
	}
}
