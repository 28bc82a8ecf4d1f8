package cors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// findChromium returns Debian's chromium (build/install-deps.sh installs it).
// The test skips only when no browser is installed and MOE_REQUIRE_HOST is
// not set; a browser that is installed but fails is a failure.
func findChromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("MOE_REQUIRE_HOST") == "1" {
		t.Fatal("chromium is not installed (build/install-deps.sh installs it: apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium); set MOE_REQUIRE_HOST=1 to make this a failure")
	return ""
}

// The page runs on its own origin (a local test server) and fetches from
// moe-host, another origin (another port), then reports what it could read.
const page = `<!doctype html><meta charset="utf-8"><title>cors test</title><script>
const api = %q;
async function probe(url, init) {
  try {
    const r = await fetch(api + url, init);
    return {status: r.status, upstream: r.headers.get("x-upstream"), body: await r.text()};
  } catch (e) {
    return {error: String(e)};
  }
}
(async () => {
  const out = {origin: location.origin};
  // Not simple (PUT, JSON, a custom header, credentials): a preflight first.
  out.api = await probe("/api/orders", {method: "PUT", credentials: "include",
    headers: {"content-type": "application/json", "x-request-id": "chromium-put"}, body: '{"n":1}'});
  // /partner allows only https://partner.example.net: the preflight is refused.
  out.partner = await probe("/partner/orders", {method: "POST", headers: {"content-type": "application/json"}, body: "{}"});
  // A simple GET needs no preflight; it reaches the upstream, but the page may not read it.
  out.partnerSimple = await probe("/partner/simple");
  // /public allows any origin ("*").
  out.public = await probe("/public/logo");
  await fetch("/report", {method: "POST", body: JSON.stringify(out)});
})();
</script>`

type probe struct {
	Status   int    `json:"status"`
	Upstream string `json:"upstream"`
	Body     string `json:"body"`
	Error    string `json:"error"`
}

type report struct {
	Origin        string `json:"origin"`
	API           probe  `json:"api"`
	Partner       probe  `json:"partner"`
	PartnerSimple probe  `json:"partnerSimple"`
	Public        probe  `json:"public"`
}

// TestE2EChromiumCrossOriginFetch: headless Chromium on a page of one origin
// fetches from moe-host running the example; Chromium itself sends the
// preflights and enforces the answers.
func TestE2EChromiumCrossOriginFetch(t *testing.T) {
	bin := findChromium(t)
	h := hosttest.StartExample(t, "envoy/examples/cors.yaml")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reports := make(chan []byte, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/html; charset=utf-8")
		fmt.Fprintf(w, page, h.URL)
	})
	mux.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		select {
		case reports <- b:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	pageURL := "http://" + ln.Addr().String() + "/"

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), pageURL)
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers too, to stop them together
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group this test started
		<-exited
		exited <- nil
	}
	defer stop()

	var raw []byte
	select {
	case raw = <-reports:
	case err := <-exited:
		exited <- err
		t.Fatalf("chromium exited before the page reported (%v):\n%s", err, tailLines(stderr.String(), 30))
	case <-ctx.Done():
		t.Fatalf("no report from the page within 60s; chromium output:\n%s", tailLines(stderr.String(), 30))
	}
	var got report
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("report %q: %v", raw, err)
	}
	t.Logf("page %s reported %s", got.Origin, raw)

	if got.API.Status != 200 || got.API.Error != "" {
		t.Fatalf("credentialed PUT from an allowed origin: %+v", got.API)
	}
	if got.API.Upstream != "upstream" {
		t.Errorf("x-upstream read by the page = %q, want the exposed header's value", got.API.Upstream)
	}
	var echoed hosttest.Echoed
	if err := json.Unmarshal([]byte(got.API.Body), &echoed); err != nil || echoed.Method != "PUT" ||
		echoed.Header("x-request-id") != "chromium-put" || echoed.Header("origin") != got.Origin {
		t.Errorf("the upstream saw %+v (%v)", echoed, err)
	}
	if !strings.Contains(got.Partner.Error, "TypeError") || got.Partner.Status != 0 {
		t.Errorf("POST to /partner (preflight refused): %+v, want a TypeError", got.Partner)
	}
	if !strings.Contains(got.PartnerSimple.Error, "TypeError") {
		t.Errorf("simple GET to /partner (no CORS headers): %+v, want a TypeError", got.PartnerSimple)
	}
	if got.Public.Status != 200 || got.Public.Error != "" {
		t.Errorf("GET /public: %+v", got.Public)
	}
	// Chromium sent the preflights itself: one allowed (/api), one refused (/partner).
	if n := h.Counter(t, "moe_cors_preflights"); n != 1 {
		t.Errorf("moe_cors_preflights = %d, want 1", n)
	}
	if n := h.Counter(t, "moe_cors_preflights_refused"); n != 1 {
		t.Errorf("moe_cors_preflights_refused = %d, want 1", n)
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
