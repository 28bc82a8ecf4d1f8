package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// The router's retries (source/common/router/router.cc, retry_state_impl.cc) behind a golang
// filter: only the upstream request is repeated; the HTTP filters (Go's DecodeHeaders,
// EncodeHeaders, OnLog) run once, and Go sees the final attempt count
// (GetIntegerValue(AttemptCount)).

// flakyUpstream answers the first x-fail requests of each x-test-id with a failure (x-fail-code,
// or a connection closed without a response for x-fail-mode: reset, or a late answer for
// x-fail-mode: slow), then 200 with what it saw.
type flakyUpstream struct {
	ln    net.Listener
	mu    sync.Mutex
	seen  map[string]int
	Port  int
	total int
}

type flakyReply struct {
	Attempt int               `json:"attempt"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
}

func startFlaky(t *testing.T) *flakyUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &flakyUpstream{ln: ln, seen: map[string]int{}, Port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: u, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return u
}

func (u *flakyUpstream) count(id string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[id]
}

func (u *flakyUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get("x-test-id")
	u.mu.Lock()
	u.seen[id]++
	n := u.seen[id]
	u.total++
	u.mu.Unlock()
	fails, _ := strconv.Atoi(r.Header.Get("x-fail"))
	if n <= fails {
		switch r.Header.Get("x-fail-mode") {
		case "reset":
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
		case "slow":
			time.Sleep(1 * time.Second)
		}
		code, _ := strconv.Atoi(r.Header.Get("x-fail-code"))
		if code == 0 {
			code = 503
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "failure %d", n)
		return
	}
	if big, _ := strconv.Atoi(r.Header.Get("x-big")); big > 0 {
		// x-big: N answers N bytes of the test pattern instead of the JSON reply.
		w.Header().Set("content-length", strconv.Itoa(big))
		w.Write(pattern(big))
		return
	}
	h := map[string]string{}
	for k := range r.Header {
		h[strings.ToLower(k)] = r.Header.Get(k)
	}
	w.Header().Set("content-type", "application/json")
	json.NewEncoder(w).Encode(flakyReply{Attempt: n, Body: string(body), Headers: h})
}

func startRetryHost(t *testing.T) (*hostProc, *flakyUpstream, string) {
	t.Helper()
	findBinaries(t)
	up := startFlaky(t)
	logPath := filepath.Join(t.TempDir(), "access.log")
	h := startHost(t, hostSpec{tmpl: "retry", listeners: []string{"main"},
		data: map[string]any{"Up": up.Port, "Dead": freePort(t), "Log": logPath},
		args: []string{"--file-flush-interval-msec", "50"}})
	return h, up, logPath
}

// waitLogLine waits for the access log line of id.
func waitLogLine(t *testing.T, path, id string) string {
	t.Helper()
	var line string
	if !tb.Poll(5*time.Second, func() bool {
		f, err := os.Open(path)
		if err != nil {
			return false
		}
		defer f.Close()
		for sc := bufio.NewScanner(f); sc.Scan(); {
			if strings.HasPrefix(sc.Text(), id+" ") {
				line = sc.Text()
				return true
			}
		}
		return false
	}) {
		b, _ := os.ReadFile(path)
		t.Fatalf("no access log line for %s in %s:\n%s", id, path, b)
	}
	return line
}

// TestRetryFlowControl: the downstream's watermark callbacks belong to the attempt (Envoy's
// UpstreamRequest registers them in onPoolReady and removes them in clearRequestEncoder), so
// the attempt a 503 retried is gone from them, and the retry's own attempt pauses and resumes
// the upstream read for a client that does not read (upstream_request.cc:773-800); the body
// arrives whole. A registration left behind by the first attempt would be called after it was
// deleted (test-asan runs this too).
func TestRetryFlowControl(t *testing.T) {
	h, up, _ := startRetryHost(t)
	const size = 32 << 20
	id := "retry-flow"
	before := h.stats(t)
	rc := h.dial(t, "main")
	rc.write(fmt.Sprintf("GET /5xx HTTP/1.1\r\nHost: test.com\r\nx-test-id: %s\r\nx-fail: 1\r\nx-big: %d\r\n\r\n", id, size))
	waitCounter(t, h, before, "cluster.up.upstream_flow_control_paused_reading_total", 1, 10*time.Second)
	res, body, err := rc.readResponse("GET")
	if err != nil {
		t.Fatalf("response: %v", err)
	}
	if res.StatusCode != 200 || body != string(pattern(size)) {
		t.Fatalf("got %d with %d bytes, want 200 and the %d pattern bytes", res.StatusCode, len(body), size)
	}
	if got := res.Header.Get("x-envoy-attempt-count"); got != "2" {
		t.Errorf("x-envoy-attempt-count %q, want 2", got)
	}
	if up.count(id) != 2 {
		t.Errorf("upstream saw %d requests, want 2", up.count(id))
	}
	after := h.stats(t)
	for _, c := range []string{"cluster.up.upstream_flow_control_resumed_reading_total", "cluster.up.upstream_rq_retry"} {
		if d := after[c] - before[c]; d < 1 {
			t.Errorf("%s grew by %d, want >= 1", c, d)
		}
	}
}

func TestRetries(t *testing.T) {
	h, up, logPath := startRetryHost(t)
	stat := func(name string) int64 { return h.stats(t)["cluster.up."+name] }

	t.Run("5xx_RetriedThenSucceeds_FiltersOnce", func(t *testing.T) {
		id := "retry-5xx-ok"
		r := h.must(t, req{listener: "main", path: "/5xx", headers: hdrs("x-test-id", id, "x-fail", "2", "x-test-basic", "1")})
		if r.status != 200 {
			t.Fatalf("status %d %q", r.status, r.body)
		}
		var rep flakyReply
		if err := json.Unmarshal([]byte(r.body), &rep); err != nil || rep.Attempt != 3 {
			t.Fatalf("upstream reply %q: %v", r.body, err)
		}
		// x-envoy-attempt-count to the upstream and in the response (include_*_attempt_count);
		// Go's EncodeHeaders saw attempt count 3.
		if rep.Headers["x-envoy-attempt-count"] != "3" || r.get("x-envoy-attempt-count") != "3" || r.get("rsp-attempt-count") != "3" {
			t.Errorf("attempt counts: upstream %q, response %q, Go %q", rep.Headers["x-envoy-attempt-count"],
				r.get("x-envoy-attempt-count"), r.get("rsp-attempt-count"))
		}
		ev := h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "destroy") })
		if countEvents(ev, "decode-header") != 1 || countEvents(ev, "encode-header") != 1 || countEvents(ev, "log path=") != 1 {
			t.Errorf("Go's filter must run once per stream; events:\n%s", strings.Join(ev, "\n"))
		}
		if up.count(id) != 3 {
			t.Errorf("upstream saw %d requests, want 3", up.count(id))
		}
		line := waitLogLine(t, logPath, id)
		if !strings.Contains(line, " code=200 attempts=3 flags=- details=via_upstream ") ||
			!strings.Contains(line, fmt.Sprintf("hosts=127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", up.Port, up.Port, up.Port)) {
			t.Errorf("access log: %q", line)
		}
	})

	t.Run("5xx_LimitExceeded_URX", func(t *testing.T) {
		id := "retry-5xx-urx"
		before := stat("upstream_rq_retry_limit_exceeded")
		r := h.must(t, req{listener: "main", path: "/5xx", headers: hdrs("x-test-id", id, "x-fail", "9", "x-test-basic", "1")})
		// The last upstream response goes downstream as it is.
		if r.status != 503 || r.body != "failure 3" || r.get("rsp-attempt-count") != "3" {
			t.Fatalf("status %d %q attempt %q", r.status, r.body, r.get("rsp-attempt-count"))
		}
		if line := waitLogLine(t, logPath, id); !strings.Contains(line, " code=503 attempts=3 flags=URX ") {
			t.Errorf("access log: %q", line)
		}
		if got := stat("upstream_rq_retry_limit_exceeded"); got != before+1 {
			t.Errorf("upstream_rq_retry_limit_exceeded %d, want %d", got, before+1)
		}
	})

	t.Run("GatewayError_NotFor500", func(t *testing.T) {
		id := "retry-gw-500"
		r := h.must(t, req{listener: "main", path: "/gateway", headers: hdrs("x-test-id", id, "x-fail", "1", "x-fail-code", "500")})
		if r.status != 500 || up.count(id) != 1 {
			t.Errorf("500 with gateway-error: status %d, %d upstream requests (want 500 once)", r.status, up.count(id))
		}
		id = "retry-gw-504"
		r = h.must(t, req{listener: "main", path: "/gateway", headers: hdrs("x-test-id", id, "x-fail", "2", "x-fail-code", "504")})
		if r.status != 200 || up.count(id) != 3 {
			t.Errorf("504 with gateway-error: status %d, %d upstream requests (want 200 after 3)", r.status, up.count(id))
		}
	})

	t.Run("RetriableStatusCodes", func(t *testing.T) {
		id := "retry-418"
		r := h.must(t, req{listener: "main", path: "/codes", headers: hdrs("x-test-id", id, "x-fail", "1", "x-fail-code", "418")})
		if r.status != 200 || up.count(id) != 2 {
			t.Errorf("418 in retriable_status_codes: status %d after %d requests", r.status, up.count(id))
		}
		id = "retry-503-not-listed"
		r = h.must(t, req{listener: "main", path: "/codes", headers: hdrs("x-test-id", id, "x-fail", "1")})
		if r.status != 503 || up.count(id) != 1 {
			t.Errorf("503 not listed: status %d after %d requests", r.status, up.count(id))
		}
	})

	t.Run("Reset_RetriedWithBody", func(t *testing.T) {
		id := "retry-reset"
		body := strings.Repeat("moe-", 2000)
		r := h.must(t, req{listener: "main", method: "POST", path: "/reset", body: body,
			headers: hdrs("x-test-id", id, "x-fail", "1", "x-fail-mode", "reset")})
		if r.status != 200 {
			t.Fatalf("status %d %q", r.status, r.body)
		}
		var rep flakyReply
		if err := json.Unmarshal([]byte(r.body), &rep); err != nil || rep.Attempt != 2 || rep.Body != body {
			t.Errorf("the retried request must carry the whole body: attempt %d, %d bytes (%v)", rep.Attempt, len(rep.Body), err)
		}
		// Without a retry for resets: 503 with the router's reset body.
		id = "retry-reset-none"
		r = h.must(t, req{listener: "main", path: "/none", headers: hdrs("x-test-id", id, "x-fail", "1", "x-fail-mode", "reset")})
		if r.status != 503 || !strings.HasPrefix(r.body, "upstream connect error or disconnect/reset before headers. reset reason: connection termination") {
			t.Errorf("reset without retry: %d %q", r.status, r.body)
		}
	})

	t.Run("PerTryTimeout", func(t *testing.T) {
		id := "retry-pertry"
		before := stat("upstream_rq_per_try_timeout")
		start := time.Now()
		r := h.must(t, req{listener: "main", path: "/pertry", headers: hdrs("x-test-id", id, "x-fail", "1", "x-fail-mode", "slow")})
		if r.status != 200 || up.count(id) != 2 {
			t.Fatalf("status %d after %d requests", r.status, up.count(id))
		}
		if d := time.Since(start); d < 250*time.Millisecond || d > 900*time.Millisecond {
			t.Errorf("took %v: want the 300 ms per-try timeout, then the retry", d)
		}
		if got := stat("upstream_rq_per_try_timeout"); got != before+1 {
			t.Errorf("upstream_rq_per_try_timeout %d, want %d", got, before+1)
		}
		// Both tries time out: 504 "upstream request timeout", flag UT.
		id = "retry-pertry-504"
		r = h.must(t, req{listener: "main", path: "/pertry", headers: hdrs("x-test-id", id, "x-fail", "2", "x-fail-mode", "slow")})
		if r.status != 504 || r.body != "upstream request timeout" {
			t.Errorf("status %d %q", r.status, r.body)
		}
		if line := waitLogLine(t, logPath, id); !strings.Contains(line, " code=504 attempts=2 flags=URX,UT details=upstream_per_try_timeout ") {
			t.Errorf("access log: %q", line)
		}
	})

	t.Run("ConnectFailure_NextHost", func(t *testing.T) {
		// Round robin starts on either host; within 2 tries one of them is the live one.
		for i := 0; i < 4; i++ {
			id := fmt.Sprintf("retry-connect-%d", i)
			r := h.must(t, req{listener: "main", path: "/connect", headers: hdrs("x-test-id", id)})
			if r.status != 200 {
				t.Fatalf("request %d: %d %q", i, r.status, r.body)
			}
		}
		if h.stats(t)["cluster.flaky.upstream_rq_retry"] < 1 || h.stats(t)["cluster.flaky.upstream_cx_connect_fail"] < 1 {
			t.Errorf("no connect-failure retry counted: %v", h.stats(t))
		}
	})

	t.Run("RetryOnHeader", func(t *testing.T) {
		// x-envoy-retry-on / x-envoy-max-retries (trusted, consumed) on a route without retries.
		id := "retry-header"
		r := h.must(t, req{listener: "main", path: "/none", headers: hdrs("x-test-id", id, "x-fail", "1",
			"x-envoy-retry-on", "5xx", "x-envoy-max-retries", "1")})
		if r.status != 200 || up.count(id) != 2 {
			t.Fatalf("status %d after %d requests", r.status, up.count(id))
		}
		var rep flakyReply
		json.Unmarshal([]byte(r.body), &rep)
		if _, ok := rep.Headers["x-envoy-retry-on"]; ok {
			t.Errorf("x-envoy-retry-on reached the upstream")
		}
	})

	t.Run("Stats", func(t *testing.T) {
		st := h.stats(t)
		for _, n := range []string{"upstream_rq_retry", "upstream_rq_retry_success", "upstream_rq_retry_backoff_exponential",
			"retry.upstream_rq_503", "retry.upstream_rq_5xx", "retry.upstream_rq_completed"} {
			if st["cluster.up."+n] < 1 {
				t.Errorf("cluster.up.%s = %d", n, st["cluster.up."+n])
			}
		}
		if st["cluster.up.upstream_rq_retry"] < st["cluster.up.upstream_rq_retry_success"] {
			t.Errorf("more retry successes than retries")
		}
		prom := h.adminGet(t, "/stats/prometheus")
		if !strings.Contains(prom, `envoy_cluster_retry_upstream_rq{envoy_response_code="503",envoy_cluster_name="up"} `) {
			t.Errorf("/stats/prometheus lacks the retry response code stat")
		}
	})
}
