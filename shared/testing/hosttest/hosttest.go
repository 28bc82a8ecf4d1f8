// Package hosttest is the one way tests start moe-host: plugins' end-to-end tests, moe-host's
// conformance suite and its network suite all run the real binary through Start, with a
// bootstrap rendered from a template, real HTTP and a real upstream (shared/testing/echo).
// It takes a tb.TB, so the end-to-end benchmark (cmd/moebench, a program) starts its hosts
// with this same code through tb.Run.
//
// Binaries come from the repository's out/ directory and are built for the test (see
// Require), or are taken as they are from $MOE_OUT. $MOE_HOST_BIN replaces out/moe-host (the
// sanitizer run uses out/moe-host-asan) and $MOE_NETONLY_BIN out/moe-host-netonly. When a
// binary is missing the test is skipped, unless MOE_REQUIRE_HOST=1 (set by `make test`), which
// makes it fail instead, so CI cannot pass by skipping.
//
// Every host runs with MOE_HOST_LOOPBACK_ONLY=1 and the test fails when the host tried to
// reach anything but loopback (CheckGuard); it is stopped with SIGTERM when the test ends and
// must exit 0 without a sanitizer or Go runtime report in its output.
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
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// LoopbackOnlyEnv is set in the environment of every moe-host a test starts: the host then
// refuses upstream connects outside 127.0.0.0/8 and ::1 and DNS names other than localhost
// (cgo/host/upstream_guard.h), counting them in the stats named by GuardStats. Tests talk to
// loopback only.
const LoopbackOnlyEnv = "MOE_HOST_LOOPBACK_ONLY=1"

// CgoCheckEnv is set in the environment of every moe-host a test starts unless the test's own
// environment has a GODEBUG: the Go runtime checks the pointers of every cgo call, as it does
// by default outside moe's libraries (build/cshared.mk turns it off there).
const CgoCheckEnv = "GODEBUG=cgocheck=1"

// EnvHas reports whether env (KEY=value entries, as os.Environ) sets key.
func EnvHas(env []string, key string) bool {
	return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
}

// GuardStats are the counters of the loopback guard. They exist (at 0) whenever the guard is
// on; a host's end of life fails the test unless each is present and 0.
var GuardStats = []string{"moe_host.upstream_cx_non_loopback_refused", "moe_host.upstream_dns_non_local_refused"}

// metricsFlush is the plugins' metric flush interval in a test host (the default is 100ms):
// 0 writes each update at once, so what a request counted is on /stats when its response
// arrives (a short flush interval raced with a loaded machine's scheduler in CI).
const metricsFlush = time.Duration(0)

// guardLogMarker is in every log line of a refusal (checked when the host is gone).
const guardLogMarker = "MOE_HOST_LOOPBACK_ONLY=1: refused"

// SanitizerMarkers are the texts of a sanitizer or Go runtime report, or of moe-host's refusal
// of a header copy Envoy would let overflow Go's buffer; a host whose output contains one fails
// the test.
var SanitizerMarkers = []string{"AddressSanitizer", "LeakSanitizer", "ThreadSanitizer", "UndefinedBehaviorSanitizer",
	"runtime error", "fatal error:", "SIGSEGV", "moe-host: stale header copy"}

// NoLibrary as Options.Library: the bootstrap loads no plugin library (e.g. moe-host-netonly).
const NoLibrary = "-"

// CheckGuard fails the test when the loopback guard of the host with admin at adminURL is off
// or refused anything: every guard stat must be present and 0. output is what the host printed,
// checked for refusals too; adminURL "" checks only the output (the host is gone).
func CheckGuard(t tb.TB, adminURL, output string) {
	t.Helper()
	if strings.Contains(output, guardLogMarker) {
		t.Errorf("moe-host refused a non-loopback upstream (tests talk to loopback only):\n%s", guardLines(output))
	}
	if adminURL == "" {
		return
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(adminURL + `/stats?filter=^moe_host\.upstream_(cx_non_loopback|dns_non_local)_refused$`)
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

// OutDir returns the directory holding the built binaries ($MOE_OUT, else <repo>/out).
func OutDir(t tb.TB) string {
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

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago (nobody listens on it
// now: also the way to name an unreachable upstream). A port is handed out once per test
// binary: the kernel may give a closed ephemeral port to the next bind(0) again, and one host's
// admin and listener ports (or two listeners) must not be the same.
func FreePort(t tb.TB) int {
	t.Helper()
	freePortsMu.Lock()
	defer freePortsMu.Unlock()
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !freePorts[p] {
			freePorts[p] = true
			return p
		}
	}
	t.Fatalf("no free port not handed out before")
	return 0
}

var (
	freePortsMu sync.Mutex
	freePorts   = map[int]bool{}
)

// Vars are the values a bootstrap template can use, besides the caller's own (which win):
// {{.Library}} (absolute path of the plugin library), {{.Port}} (a free port for the
// listener), {{.AdminPort}}, {{.Ports.<name>}} (one per Options.Listeners).
type Vars map[string]any

// Options tune Start and StartExpectFailure. The zero value of each field is its default.
type Options struct {
	// Binary is the host binary under out/ (default "moe-host"; $MOE_HOST_BIN and
	// $MOE_NETONLY_BIN replace moe-host and moe-host-netonly).
	Binary string
	// Library is the plugin library under out/ for {{.Library}} (default "libgolang.so");
	// NoLibrary for none.
	Library     string
	Concurrency int    // --concurrency (default 2)
	LogLevel    string // -l (default "info")
	// Args are more command-line arguments, after -c, --concurrency and -l.
	Args []string
	// Wrapper is a command the host runs under, its binary and arguments appended, e.g.
	// {"valgrind", "--tool=callgrind"} (cmd/moebench). The wrapper must run the host in its
	// own process (as valgrind does), so that Host.Pid is the host's.
	Wrapper []string
	// Env is more environment (KEY=VALUE) for the host; MOE_HOST_LOOPBACK_ONLY=1 cannot be
	// overridden.
	Env []string
	// Listeners are names of listeners that need a port: each gets a free one, {{.Ports.<name>}}
	// in the template and Host.Ports[name], and Start waits until each accepts.
	Listeners []string
	// ConfigName is the file name of the rendered bootstrap (default "envoy.yaml"). A name
	// ending in ".json" is a compiled bootstrap the host reads without moectl.
	ConfigName string
	// Output also receives everything the host prints (stdout and stderr), as it comes.
	Output io.Writer
	// StartTimeout bounds the wait for /ready, or for the exit in StartExpectFailure
	// (default 30s).
	StartTimeout time.Duration
	// AllowNonLoopback: the test makes the loopback guard refuse on purpose, so the host's end
	// of life does not require the guard counters to be 0.
	AllowNonLoopback bool
	// WantExitCode, for StartExpectFailure: the exit code required (default: any but 0).
	WantExitCode int
}

func (o Options) withDefaults() Options {
	if o.Binary == "" {
		o.Binary = "moe-host"
	}
	if o.Library == "" {
		o.Library = "libgolang.so"
	}
	if o.Concurrency == 0 {
		o.Concurrency = 2
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.ConfigName == "" {
		o.ConfigName = "envoy.yaml"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 30 * time.Second
	}
	return o
}

func firstOptions(opts []Options) Options {
	if len(opts) > 1 {
		panic("hosttest: at most one Options")
	}
	if len(opts) == 1 {
		return opts[0].withDefaults()
	}
	return Options{}.withDefaults()
}

// Host is a running moe-host.
type Host struct {
	URL      string         // http://127.0.0.1:<Port>
	AdminURL string         // http://127.0.0.1:<admin port>
	Port     int            // the {{.Port}} listener
	Ports    map[string]int // the Options.Listeners ports by name
	Config   string         // the rendered bootstrap

	opts    Options
	cmd     *exec.Cmd
	output  *lockedBuffer
	exited  chan struct{}
	waitErr error // valid once exited is closed

	mu           sync.Mutex
	exitExpected bool
	stopped      bool
}

// prepared is a rendered bootstrap and the command that runs the host on it.
type prepared struct {
	cmd    *exec.Cmd
	config string
	vars   Vars
}

func prepare(t tb.TB, tmpl string, vars Vars, o Options) prepared {
	t.Helper()
	hostBin := Require(t, o.Binary)
	compiled := strings.HasSuffix(o.ConfigName, ".json")
	var moectl string
	if !compiled {
		moectl = Require(t, "moectl")
	}
	all := Vars{"Port": FreePort(t), "AdminPort": FreePort(t)}
	if o.Library != NoLibrary {
		all["Library"] = Require(t, o.Library)
	}
	ports := map[string]int{}
	for _, l := range o.Listeners {
		ports[l] = FreePort(t)
	}
	all["Ports"] = ports
	for k, v := range vars {
		all[k] = v
	}
	var rendered bytes.Buffer
	tpl, err := template.New(o.ConfigName).Option("missingkey=error").Parse(tmpl)
	if err != nil {
		t.Fatalf("bootstrap template: %v", err)
	}
	if err := tpl.Execute(&rendered, all); err != nil {
		t.Fatalf("render bootstrap: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), o.ConfigName)
	if err := os.WriteFile(cfg, rendered.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-c", cfg, "--concurrency", strconv.Itoa(o.Concurrency), "-l", o.LogLevel}, o.Args...)
	argv := append([]string{hostBin}, args...)
	if len(o.Wrapper) > 0 {
		argv = append(append([]string(nil), o.Wrapper...), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	env := os.Environ()
	if moectl != "" {
		env = append(env, "MOE_MOECTL="+moectl)
	}
	if !EnvHas(o.Env, metrics.FlushIntervalEnv) {
		env = append(env, metrics.FlushIntervalEnv+"="+metricsFlush.String()) // the first of duplicates wins
	}
	if !EnvHas(env, "GODEBUG") && !EnvHas(o.Env, "GODEBUG") {
		// The libraries turn the runtime's cgo pointer check off by default
		// (build/cshared.mk); tests keep it on so a bad pointer handed to C fails them.
		env = append(env, CgoCheckEnv)
	}
	cmd.Env = append(append(env, o.Env...), LoopbackOnlyEnv)
	return prepared{cmd: cmd, config: rendered.String(), vars: all}
}

// Start renders tmpl (a text/template of an Envoy bootstrap) with vars into a temporary file,
// starts moe-host on it and waits until its admin /ready answers 200 and every named listener
// accepts. The host is stopped when the test ends (see the package comment).
func Start(t tb.TB, tmpl string, vars Vars, opts ...Options) *Host {
	t.Helper()
	o := firstOptions(opts)
	p := prepare(t, tmpl, vars, o)
	h := &Host{
		Config: p.config,
		opts:   o,
		cmd:    p.cmd,
		output: &lockedBuffer{},
		exited: make(chan struct{}),
	}
	h.Port, _ = p.vars["Port"].(int)
	h.Ports, _ = p.vars["Ports"].(map[string]int)
	h.URL = fmt.Sprintf("http://127.0.0.1:%d", h.Port)
	h.AdminURL = fmt.Sprintf("http://127.0.0.1:%v", p.vars["AdminPort"])
	var w io.Writer = h.output
	if o.Output != nil {
		w = io.MultiWriter(h.output, o.Output)
	}
	h.cmd.Stdout, h.cmd.Stderr = w, w
	t.Logf("starting %s", strings.Join(h.cmd.Args, " "))
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", h.cmd.Path, err)
	}
	go func() { h.waitErr = h.cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() { h.Stop(t) })

	deadline := time.Now().Add(o.StartTimeout)
	c := &http.Client{Timeout: 2 * time.Second}
	exited := false
	ready := tb.Poll(o.StartTimeout, func() bool {
		select {
		case <-h.exited:
			exited = true
			return true
		default:
		}
		resp, err := c.Get(h.AdminURL + "/ready")
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	switch {
	case exited:
		h.markStopped()
		t.Fatalf("moe-host exited at start (%v); bootstrap:\n%s\noutput:\n%s", h.waitErr, h.Config, tail(h.Output(), 8000))
	case !ready:
		t.Fatalf("moe-host not ready on admin /ready after %v; output:\n%s", o.StartTimeout, tail(h.Output(), 8000))
	}
	names := make([]string, 0, len(h.Ports))
	for name := range h.Ports {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !waitDial(h.Ports[name], time.Until(deadline)+time.Second) {
			t.Fatalf("listener %s on port %d not accepting; output:\n%s", name, h.Ports[name], tail(h.Output(), 8000))
		}
	}
	return h
}

func waitDial(port int, d time.Duration) bool {
	return tb.Poll(d, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// StartExpectFailure runs moe-host on a bootstrap that must be rejected at start and returns
// what it printed. It fails the test if the host does not exit within Options.StartTimeout,
// exits 0 (or not with Options.WantExitCode), or prints a sanitizer report.
func StartExpectFailure(t tb.TB, tmpl string, vars Vars, opts ...Options) string {
	t.Helper()
	o := firstOptions(opts)
	p := prepare(t, tmpl, vars, o)
	var out lockedBuffer
	var w io.Writer = &out
	if o.Output != nil {
		w = io.MultiWriter(&out, o.Output)
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.cmd.Path, err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(o.StartTimeout):
		_ = p.cmd.Process.Kill()
		<-done
		t.Fatalf("moe-host did not reject the bootstrap within %v; output:\n%s", o.StartTimeout, tail(out.String(), 8000))
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		t.Fatalf("moe-host exited 0 on a bootstrap that must be rejected:\n%s", out.String())
	case !errors.As(err, &ee):
		t.Fatalf("moe-host: %v", err)
	case o.WantExitCode != 0 && ee.ExitCode() != o.WantExitCode:
		t.Errorf("moe-host exited with %d, want %d:\n%s", ee.ExitCode(), o.WantExitCode, out.String())
	}
	if !o.AllowNonLoopback {
		CheckGuard(t, "", out.String())
	}
	checkSanitizers(t, out.String())
	return out.String()
}

// RunResult is what a moe-host run to completion (Run) printed, and how it ended.
type RunResult struct {
	Stdout, Stderr string
	ExitCode       int
	// ConfigPath is the rendered bootstrap the host was given with -c.
	ConfigPath string
}

// Run renders tmpl into a bootstrap file as Start does and runs moe-host on it to completion:
// for the modes that do not serve (--mode validate, --mode init_only) and for --version and
// --help (Options.Args). It fails the test if the host does not exit within
// Options.StartTimeout or prints a sanitizer report; the exit code is the caller's to check.
func Run(t tb.TB, tmpl string, vars Vars, opts ...Options) RunResult {
	t.Helper()
	o := firstOptions(opts)
	p := prepare(t, tmpl, vars, o)
	var stdout, stderr lockedBuffer
	p.cmd.Stdout, p.cmd.Stderr = &stdout, &stderr
	if o.Output != nil {
		p.cmd.Stdout, p.cmd.Stderr = io.MultiWriter(&stdout, o.Output), io.MultiWriter(&stderr, o.Output)
	}
	t.Logf("running %s", strings.Join(p.cmd.Args, " "))
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.cmd.Path, err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(o.StartTimeout):
		_ = p.cmd.Process.Kill()
		<-done
		t.Fatalf("moe-host still running %v later; output:\n%s%s", o.StartTimeout, stdout.String(), tail(stderr.String(), 8000))
	}
	res := RunResult{Stdout: stdout.String(), Stderr: stderr.String(), ConfigPath: p.cmd.Args[2]}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	default:
		t.Fatalf("moe-host: %v", err)
	}
	if !o.AllowNonLoopback {
		CheckGuard(t, "", res.Stdout+res.Stderr)
	}
	checkSanitizers(t, res.Stdout+res.Stderr)
	return res
}

// Output is everything the host printed so far (stdout and stderr).
func (h *Host) Output() string { return h.output.String() }

// Stderr is Output (kept for older callers).
func (h *Host) Stderr() string { return h.Output() }

// Addr is "127.0.0.1:<port>" of a named listener (Options.Listeners).
func (h *Host) Addr(t tb.TB, listener string) string {
	t.Helper()
	p, ok := h.Ports[listener]
	if !ok {
		t.Fatalf("no listener %q (Options.Listeners)", listener)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// Pid is the host's process id (for /proc/<pid>/stat, callgrind_control).
func (h *Host) Pid() int { return h.cmd.Process.Pid }

// Signal sends sig to the host process.
func (h *Host) Signal(sig os.Signal) error { return h.cmd.Process.Signal(sig) }

// Exited is closed when the host process has exited.
func (h *Host) Exited() <-chan struct{} { return h.exited }

// Alive fails the test if the host has exited.
func (h *Host) Alive(t tb.TB) {
	t.Helper()
	select {
	case <-h.exited:
		t.Fatalf("moe-host has exited: %v\noutput:\n%s", h.waitErr, tail(h.Output(), 8000))
	default:
	}
}

// WaitExit waits up to d for the host to exit on its own (after Signal, or /quitquitquit) and
// returns its exit error (nil for exit 0). The exit is then expected: the end of the test does
// not report it. It fails the test when the host is still running after d.
func (h *Host) WaitExit(t tb.TB, d time.Duration) error {
	t.Helper()
	h.mu.Lock()
	h.exitExpected = true
	h.mu.Unlock()
	select {
	case <-h.exited:
		return h.waitErr
	case <-time.After(d):
		t.Fatalf("moe-host still running %v later", d)
		return nil
	}
}

// Stats returns admin /stats as name -> value (counters and gauges). Plugins' metric updates are
// unbatched in a test host (metricsFlush), so they are there when the request's response is.
func (h *Host) Stats(t tb.TB) map[string]string {
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
func (h *Host) Counter(t tb.TB, name string) int64 {
	t.Helper()
	v, _ := strconv.ParseInt(h.Stats(t)[name], 10, 64)
	return v
}

func (h *Host) markStopped() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.stopped
	h.stopped = true
	return was
}

// Stop ends the host now, with the end-of-life checks: the loopback guard (CheckGuard), then
// SIGTERM and exit 0 within 20s, and no sanitizer report in the output. A host that exited
// on its own fails the test unless WaitExit expected it. It runs once; the test's cleanup
// calls it too.
func (h *Host) Stop(t tb.TB) {
	t.Helper()
	if h.markStopped() {
		return
	}
	h.mu.Lock()
	expected := h.exitExpected
	h.mu.Unlock()
	select {
	case <-h.exited:
		if !expected {
			t.Errorf("moe-host exited before the end of the test: %v", h.waitErr)
		}
		if !h.opts.AllowNonLoopback {
			CheckGuard(t, "", h.Output())
		}
	default:
		if !h.opts.AllowNonLoopback {
			CheckGuard(t, h.AdminURL, h.Output())
		}
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
			if h.waitErr != nil {
				t.Errorf("moe-host exit after SIGTERM: %v (want exit code 0)", h.waitErr)
			}
		case <-time.After(20 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.exited
			t.Errorf("moe-host did not exit within 20s of SIGTERM")
		}
	}
	checkSanitizers(t, h.Output())
	if t.Failed() {
		t.Logf("moe-host output:\n%s", tail(h.Output(), 64<<10))
	}
}

func checkSanitizers(t tb.TB, out string) {
	t.Helper()
	for _, m := range SanitizerMarkers {
		if i := strings.Index(out, m); i >= 0 {
			t.Errorf("moe-host output contains %q:\n%s", m, out[max(0, i-2000):min(len(out), i+6000)])
			return
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}

// maxOutput bounds what is kept of a host's output; the head has the startup errors.
const maxOutput = 64 << 20

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > maxOutput {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ClosedPort returns a loopback TCP port that refuses connections for the
// whole test: a socket is bound to it but never listens, so a connect gets a
// reset (ECONNREFUSED) and no other process (a parallel test package) can take
// the port in the meantime, as it could with a port that was merely free a
// moment ago. Use it for "the service is down".
func ClosedPort(t tb.TB) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("closed port: socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("closed port: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("closed port: getsockname: %v", err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}
