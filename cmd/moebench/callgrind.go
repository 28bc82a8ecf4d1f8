package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// Instructions per request under callgrind: moe-host runs under valgrind's callgrind with one
// worker, GOMAXPROCS=2, no asynchronous preemption and valgrind's fair scheduler (without
// them the counts wander by several percent between runs). Two Ps, not one: with a single P
// the runtime's sysmon takes it from Envoy's worker thread whenever the thread stays in C
// for more than 20 µs between two calls into Go — under valgrind that is every time — and
// hands it to another thread that finds nothing to do: two handoffs a request, ~2.7k
// instructions in B1, which a host with an idle P (GOMAXPROCS > 1, the default on this
// machine and in production) does not pay (runtime/proc.go retake). After a warm-up the counters are
// zeroed (callgrind_control --zero), n keep-alive requests are sent one at a time, and the
// profile is dumped (callgrind_control --dump): its total divided by n is the figure. The
// startup, the warm-up and the shutdown are outside the window; what runs in the host during
// it is counted, background goroutines (timers, GC) included, as it is real cost.

// callgrindProcs is the GOMAXPROCS of the callgrind runs (see above).
const callgrindProcs = 2

// callgrindRun is one such measurement.
type callgrindRun struct {
	Requests     int     `json:"requests"`
	Instructions int64   `json:"instructions"`
	PerRequest   float64 `json:"per_request"`
	// Crossings per request over the same window (from /stats).
	Crossings map[string]float64 `json:"crossings"`
	// WindowSeconds is the wall time of the window (requests under callgrind are slow).
	WindowSeconds float64 `json:"window_seconds"`
	// GCCycles is how many Go GC cycles ended inside the window (calls of
	// runtime.gcMarkTermination in the profile). A cycle costs millions of instructions and
	// comes every few thousand requests, so a window holds a whole number of them: with too
	// few requests a config's figure depends on where its cycles fell (2000 requests: B1 had
	// none, B2 three), not on what its requests allocate.
	GCCycles int64 `json:"gc_cycles"`
	// HeapGoalBytes and GoSysBytes are libgolang.so's moe_runtime_heap_goal_bytes and
	// moe_runtime_sys_bytes at the window's end (0 for configs without moe): what GOGC or
	// GOMEMLIMIT in the environment did to the Go side's memory, next to the GC cycles.
	HeapGoalBytes int64 `json:"heap_goal_bytes,omitempty"`
	GoSysBytes    int64 `json:"go_sys_bytes,omitempty"`
}

func measureCallgrind(t tb.TB, c Config, s *services, p params) callgrindRun {
	t.Helper()
	dir := t.TempDir()
	h := startHost(t, c, s, hosttest.Options{
		Wrapper: []string{"valgrind", "--tool=callgrind", "--fair-sched=yes",
			"--callgrind-out-file=" + filepath.Join(dir, "callgrind.out.%p")},
		Env:          []string{"GODEBUG=asyncpreemptoff=1", "GOMAXPROCS=" + strconv.Itoa(callgrindProcs)},
		Concurrency:  1,
		LogLevel:     "warning",
		StartTimeout: 3 * time.Minute,
	})
	cl, err := newClient(h.URL, c.Headers)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.close()
	if err := cl.run(p.Warmup, 5*time.Minute); err != nil {
		t.Fatalf("%s warm-up: %v", c.ID, err)
	}
	settle()
	before, err := counters(h.AdminURL)
	if err != nil {
		t.Fatalf("%s: /stats: %v", c.ID, err)
	}
	callgrindControl(t, h.Pid(), "--zero")
	start := time.Now()
	if err := cl.run(p.N, 10*time.Minute); err != nil {
		t.Fatalf("%s: %v", c.ID, err)
	}
	settle()
	window := time.Since(start)
	callgrindControl(t, h.Pid(), "--dump=moebench")
	after, err := counters(h.AdminURL)
	if err != nil {
		t.Fatalf("%s: /stats: %v", c.ID, err)
	}
	checkNotMoved(t, c, before, after)
	dumps, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("callgrind.out.%d.*", h.Pid())))
	if len(dumps) != 1 {
		t.Fatalf("%s: want one callgrind dump in %s, found %v", c.ID, dir, dumps)
	}
	total, err := callgrindTotalFile(dumps[0])
	if err != nil {
		t.Fatalf("%s: %v", c.ID, err)
	}
	gcs, err := callgrindCallsFile(dumps[0], "runtime.gcMarkTermination")
	if err != nil {
		t.Fatalf("%s: %v", c.ID, err)
	}
	if p.Profiles != "" {
		keepProfile(t, dumps[0], filepath.Join(p.Profiles, fmt.Sprintf("%s.callgrind", c.ID)))
	}
	return callgrindRun{
		Requests:      p.N,
		Instructions:  total,
		PerRequest:    float64(total) / float64(p.N),
		Crossings:     crossingsPerRequest(before, after, p.N),
		WindowSeconds: window.Seconds(),
		GCCycles:      gcs,
		HeapGoalBytes: after[metrics.RuntimeHeapGoalBytes],
		GoSysBytes:    after[metrics.RuntimeSysBytes],
	}
}

// keepProfile copies a dump for callgrind_annotate (the file of the last run of a config).
func keepProfile(t tb.TB, from, to string) {
	t.Helper()
	raw, err := os.ReadFile(from)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(to), 0o755)
	}
	if err == nil {
		err = os.WriteFile(to, raw, 0o644)
	}
	if err != nil {
		t.Errorf("keep the profile: %v", err)
	}
}

// callgrindControl runs callgrind_control with one option on the host's pid (through vgdb).
func callgrindControl(t tb.TB, pid int, opt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "callgrind_control", opt, strconv.Itoa(pid)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("callgrind_control %s %d: %v\n%s", opt, pid, err, out)
	}
}

func callgrindTotalFile(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := parseCallgrindTotal(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// parseCallgrindTotal returns the Ir total of a callgrind profile: the "summary:" line of its
// header (the "totals:" line at the end when there is no summary), at the position of Ir in
// the "events:" line.
func parseCallgrindTotal(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	irAt := -1
	var summary, totals []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "events:"):
			for i, e := range strings.Fields(strings.TrimPrefix(line, "events:")) {
				if e == "Ir" {
					irAt = i
				}
			}
		case strings.HasPrefix(line, "summary:"):
			summary = strings.Fields(strings.TrimPrefix(line, "summary:"))
		case strings.HasPrefix(line, "totals:"):
			totals = strings.Fields(strings.TrimPrefix(line, "totals:"))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if irAt < 0 {
		return 0, fmt.Errorf("no Ir in the events: line (not a callgrind profile?)")
	}
	vals := summary
	if vals == nil {
		vals = totals
	}
	if len(vals) <= irAt {
		return 0, fmt.Errorf("no summary: or totals: line with an Ir value")
	}
	return strconv.ParseInt(vals[irAt], 10, 64)
}

func callgrindCallsFile(path, fn string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := parseCallgrindCalls(f, fn)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// parseCallgrindCalls returns how many times function fn was called in a callgrind profile:
// the sum of the counts of the "calls=" lines under a "cfn=" naming it. Names may be
// compressed ("cfn=(12) name" the first time, "cfn=(12)" afterwards, ids shared with "fn="),
// and a recursion level suffix ("name'2") counts as the same function.
func parseCallgrindCalls(r io.Reader, fn string) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	names := callgrindNames{}
	name := func(v string) string { return names.resolve("fn", v) }
	base := func(n string) string {
		if i := strings.LastIndexByte(n, '\''); i > 0 {
			if _, err := strconv.Atoi(n[i+1:]); err == nil {
				return n[:i]
			}
		}
		return n
	}
	var total int64
	target := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "fn="):
			name(line[3:])
		case strings.HasPrefix(line, "cfn="):
			target = base(name(line[4:])) == fn
		case strings.HasPrefix(line, "calls="):
			if target {
				f := strings.Fields(line[6:])
				if len(f) == 0 {
					return 0, fmt.Errorf("bad line %q", line)
				}
				n, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("bad line %q: %w", line, err)
				}
				total += n
			}
			target = false
		}
	}
	return total, sc.Err()
}
