// Package hosttest starts moe-host with a bootstrap YAML for end-to-end tests: plugins are run
// through the real libgolang.so and Envoy's C ABI, with real HTTP to a real upstream.
//
// Binaries come from the repository's out/ directory (built by `make build`), or from $MOE_OUT.
// $MOE_HOST_BIN selects another host binary (the sanitizer run uses out/moe-host-asan). When a
// binary is missing the test is skipped, unless MOE_REQUIRE_HOST=1 (set by `make test`), which
// makes it fail instead, so CI cannot pass by skipping.
package hosttest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"
)

// LoopbackOnlyEnv is set in the environment of every moe-host a test starts: the host then
// refuses upstream connects outside 127.0.0.0/8 and ::1 and DNS names other than localhost
// (cgo/host/upstream_guard.h), counting them in the stats named by GuardStats. Tests talk to
// loopback only.
const LoopbackOnlyEnv = "MOE_HOST_LOOPBACK_ONLY=1"

// GuardStats are the counters of the loopback guard. They exist (at 0) whenever the guard is
// on; a host's end of life fails the test unless each is present and 0.
var GuardStats = []string{"moe_host.upstream_cx_non_loopback_refused", "moe_host.upstream_dns_non_local_refused"}

// guardLogMarker is in every log line of a refusal (checked when the host is gone).
const guardLogMarker = "MOE_HOST_LOOPBACK_ONLY=1: refused"

// CheckGuard fails the test when the loopback guard of the host with admin at adminURL is off
// or refused anything: every guard stat must be present and 0. output is what the host printed,
// checked for refusals too.
func CheckGuard(t testing.TB, adminURL, output string) {
	t.Helper()
	if strings.Contains(output, guardLogMarker) {
		t.Errorf("moe-host refused a non-loopback upstream (tests talk to loopback only):\n%s", guardLines(output))
	}
	if adminURL == "" {
		return
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(adminURL + "/stats?filter=^moe_host\\.upstream_(cx_non_loopback|dns_non_local)_refused$")
	if err != nil {
		t.Errorf("loopback guard: admin /stats: %v", err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			got[k] = v
		}
	}
	for _, name := range GuardStats {
		v, ok := got[name]
		switch {
		case !ok:
			t.Errorf("loopback guard is off: /stats has no %s (is %s set, is the binary current?)", name, LoopbackOnlyEnv)
		case v != "0":
			t.Errorf("%s = %s: moe-host tried to leave the machine (tests talk to loopback only)", name, v)
		}
	}
}

func guardLines(output string) string {
	var lines []string
	for _, l := range strings.Split(output, "\n") {
		if strings.Contains(l, guardLogMarker) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// OutDir returns the directory holding the built binaries.
func OutDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("MOE_OUT"); d != "" {
		return d
	}
	dir, err := repoRoot()
	if err != nil {
		t.Fatalf("%v; set MOE_OUT", err)
	}
	return filepath.Join(dir, "out")
}

var errNoGoMod = errors.New("no go.mod above the test directory")

// Require returns the path of out/<name>, skipping or failing the test when it is missing.
func Require(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(OutDir(t), name)
	if name == "moe-host" {
		if bin := os.Getenv("MOE_HOST_BIN"); bin != "" {
			p = bin
		}
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("MOE_REQUIRE_HOST") == "1" {
			t.Fatalf("%s is missing (run make build): %v", p, err)
		}
		t.Skipf("%s is missing (run make build)", p)
	}
	return p
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Host is a running moe-host.
type Host struct {
	URL      string // http://127.0.0.1:<listener port>
	AdminURL string // http://127.0.0.1:<admin port>
	Port     int
	cmd      *exec.Cmd
	stderr   *lockedBuffer
	exited   chan struct{}
	waitErr  error
}

// Vars are the values a bootstrap template can use, besides the caller's own: {{.Library}}
// (absolute path of the plugin library), {{.Port}} (listener), {{.AdminPort}}.
type Vars map[string]any

// Options tune Start.
type Options struct {
	Library     string // file name under out/ (default "libgolang.so")
	Concurrency int    // --concurrency (default 2)
	LogLevel    string // -l (default "info")
}

// Start renders tmpl with vars into a temporary envoy.yaml, starts moe-host on it and waits
// until its admin /ready answers. The host is stopped with SIGTERM when the test ends, and the
// test fails if it did not exit 0 or if its stderr shows a sanitizer or Go runtime report.
func Start(t testing.TB, tmpl string, vars Vars, opts ...Options) *Host {
	t.Helper()
	o := Options{Library: "libgolang.so", Concurrency: 2, LogLevel: "info"}
	if len(opts) > 0 {
		if opts[0].Library != "" {
			o.Library = opts[0].Library
		}
		if opts[0].Concurrency != 0 {
			o.Concurrency = opts[0].Concurrency
		}
		if opts[0].LogLevel != "" {
			o.LogLevel = opts[0].LogLevel
		}
	}
	hostBin := Require(t, "moe-host")
	Require(t, "moectl")
	lib := Require(t, o.Library)

	all := Vars{"Library": lib, "Port": FreePort(t), "AdminPort": FreePort(t)}
	for k, v := range vars {
		all[k] = v
	}
	var rendered bytes.Buffer
	if err := template.Must(template.New("bootstrap").Option("missingkey=error").Parse(tmpl)).Execute(&rendered, all); err != nil {
		t.Fatalf("render bootstrap: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "envoy.yaml")
	if err := os.WriteFile(cfg, rendered.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	h := &Host{
		Port:     all["Port"].(int),
		URL:      fmt.Sprintf("http://127.0.0.1:%d", all["Port"]),
		AdminURL: fmt.Sprintf("http://127.0.0.1:%d", all["AdminPort"]),
		stderr:   &lockedBuffer{},
		exited:   make(chan struct{}),
	}
	h.cmd = exec.Command(hostBin, "-c", cfg, "--concurrency", strconv.Itoa(o.Concurrency), "-l", o.LogLevel)
	h.cmd.Stdout = h.stderr
	h.cmd.Stderr = h.stderr
	h.cmd.Env = append(os.Environ(), "MOE_MOECTL="+filepath.Join(OutDir(t), "moectl"), LoopbackOnlyEnv)
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start moe-host: %v", err)
	}
	go func() { h.waitErr = h.cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() { h.stop(t) })

	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-h.exited:
			t.Fatalf("moe-host exited at start (%v):\n%s", h.waitErr, h.stderr.String())
		default:
		}
		if resp, err := http.Get(h.AdminURL + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("moe-host not ready after 20s:\n%s", h.stderr.String())
	return nil
}

// StartExpectFailure runs moe-host on a bootstrap that must be rejected at start and returns
// what it printed. It fails the test if the host starts serving or exits 0.
func StartExpectFailure(t testing.TB, tmpl string, vars Vars) string {
	t.Helper()
	hostBin := Require(t, "moe-host")
	lib := Require(t, "libgolang.so")
	all := Vars{"Library": lib, "Port": FreePort(t), "AdminPort": FreePort(t)}
	for k, v := range vars {
		all[k] = v
	}
	var rendered bytes.Buffer
	if err := template.Must(template.New("bootstrap").Parse(tmpl)).Execute(&rendered, all); err != nil {
		t.Fatalf("render bootstrap: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "envoy.yaml")
	if err := os.WriteFile(cfg, rendered.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hostBin, "-c", cfg)
	cmd.Env = append(os.Environ(), "MOE_MOECTL="+filepath.Join(OutDir(t), "moectl"), LoopbackOnlyEnv)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("moe-host did not reject the bootstrap within 20s")
	}
	if err == nil {
		t.Fatalf("moe-host exited 0 on a bootstrap that must be rejected:\n%s", out)
	}
	CheckGuard(t, "", string(out))
	return string(out)
}

// Stderr is what the host printed so far.
func (h *Host) Stderr() string { return h.stderr.String() }

// Stats returns admin /stats as name -> value (counters and gauges).
func (h *Host) Stats(t testing.TB) map[string]string {
	t.Helper()
	resp, err := http.Get(h.AdminURL + "/stats")
	if err != nil {
		t.Fatalf("admin /stats: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			out[k] = v
		}
	}
	return out
}

// Counter returns a counter or gauge from /stats as an integer (0 when absent).
func (h *Host) Counter(t testing.TB, name string) int64 {
	t.Helper()
	v, _ := strconv.ParseInt(h.Stats(t)[name], 10, 64)
	return v
}

func (h *Host) stop(t testing.TB) {
	select {
	case <-h.exited:
		CheckGuard(t, "", h.stderr.String())
	default:
		CheckGuard(t, h.AdminURL, h.stderr.String())
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
		case <-time.After(15 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.exited
			t.Errorf("moe-host did not stop within 15s of SIGTERM")
		}
		if h.waitErr != nil {
			t.Errorf("moe-host exited with %v", h.waitErr)
		}
	}
	out := h.stderr.String()
	for _, bad := range []string{"AddressSanitizer", "LeakSanitizer", "runtime error:", "fatal error:", "SIGSEGV"} {
		if strings.Contains(out, bad) {
			t.Errorf("moe-host stderr contains %q:\n%s", bad, out)
			break
		}
	}
	if t.Failed() {
		t.Logf("moe-host output:\n%s", out)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
