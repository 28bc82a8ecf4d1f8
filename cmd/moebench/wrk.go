package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// Throughput, latency and host CPU under load: moe-host runs normally (no valgrind), wrk
// sends keep-alive requests over a fixed number of connections for a fixed time, and the
// host's utime+stime from /proc/<pid>/stat over wrk's run, divided by the requests wrk
// completed, is the host CPU per request.

// loadRun is one wrk measurement.
type loadRun struct {
	wrkResult
	// CPUSeconds is the host's user+system time during wrk's run.
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUPerRequestUs is CPUSeconds per completed request, in microseconds.
	CPUPerRequestUs float64 `json:"cpu_us_per_request"`
	// IdleCPUMsPerS is the host's CPU time while nobody sends anything (after the warm-up
	// and params.IdleAfter, before wrk), in milliseconds per second: timers and background
	// goroutines. Measured in the first round only (nil in the others).
	IdleCPUMsPerS *float64 `json:"idle_cpu_ms_per_s,omitempty"`
}

// wrkResult is what wrk printed.
type wrkResult struct {
	Requests     int64   `json:"requests"`
	Seconds      float64 `json:"seconds"`
	RPS          float64 `json:"rps"`
	P50Us        float64 `json:"p50_us"`
	P99Us        float64 `json:"p99_us"`
	Non2xx       int64   `json:"non_2xx"`
	SocketErrors int64   `json:"socket_errors"`
}

func measureLoad(t tb.TB, c Config, s *services, p params, round int) loadRun {
	t.Helper()
	h := startHost(t, c, s, hosttest.Options{Concurrency: p.Concurrency, LogLevel: "warning"})
	cl, err := newClient(h.URL, c.Headers)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.run(p.LoadWarmup, time.Minute); err != nil {
		t.Fatalf("%s warm-up: %v", c.ID, err)
	}
	cl.close()
	var idle *float64
	if round == 0 && p.Idle > 0 {
		time.Sleep(p.IdleAfter)
		v, err := idleCPU(h.Pid(), p.Idle)
		if err != nil {
			t.Fatal(err)
		}
		idle = &v
	}
	args := []string{"-t", strconv.Itoa(p.Threads), "-c", strconv.Itoa(p.Connections),
		"-d", fmt.Sprintf("%ds", int(p.Duration.Seconds())), "--latency", "--timeout", "5s"}
	for k, v := range c.Headers {
		args = append(args, "-H", k+": "+v)
	}
	args = append(args, h.URL+requestPath)
	statsBefore, err := counters(h.AdminURL)
	if err != nil {
		t.Fatalf("%s: /stats: %v", c.ID, err)
	}
	before, err := procCPUTicks(h.Pid())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.Duration+30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "wrk", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: wrk %s: %v\n%s", c.ID, strings.Join(args, " "), err, out)
	}
	after, err := procCPUTicks(h.Pid())
	if err != nil {
		t.Fatal(err)
	}
	settle()
	statsAfter, err := counters(h.AdminURL)
	if err != nil {
		t.Fatalf("%s: /stats: %v", c.ID, err)
	}
	checkNotMoved(t, c, statsBefore, statsAfter)
	w, err := parseWrk(string(out))
	if err != nil {
		t.Fatalf("%s: %v\n%s", c.ID, err, out)
	}
	if w.Non2xx > 0 || w.SocketErrors > 0 || w.Requests == 0 {
		t.Fatalf("%s: wrk saw %d non-2xx responses and %d socket errors in %d requests (the config must let the benchmark's request pass)\n%s",
			c.ID, w.Non2xx, w.SocketErrors, w.Requests, out)
	}
	cpu := float64(after-before) / float64(p.ClockTicks)
	return loadRun{wrkResult: w, CPUSeconds: cpu, CPUPerRequestUs: cpu / float64(w.Requests) * 1e6, IdleCPUMsPerS: idle}
}

// idleCPU is the process's CPU time over d, in ms per second, from the nanosecond counters
// of /proc/<pid>/task/*/schedstat (the clock ticks of /proc/<pid>/stat are too coarse for a
// second of idling).
func idleCPU(pid int, d time.Duration) (float64, error) {
	before, err := procCPUNanos(pid)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	time.Sleep(d)
	after, err := procCPUNanos(pid)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / 1e6 / time.Since(start).Seconds(), nil
}

// procCPUNanos sums the on-CPU nanoseconds (first field of schedstat) of a process's threads.
func procCPUNanos(pid int) (int64, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, task := range tasks {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if err != nil {
			continue // the thread has just exited
		}
		n, err := parseSchedstat(string(raw))
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// parseSchedstat returns the first field of a schedstat line: time spent on the CPU, in ns.
func parseSchedstat(s string) (int64, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return 0, fmt.Errorf("schedstat %q: want 3 fields", trim(s, 80))
	}
	return strconv.ParseInt(f[0], 10, 64)
}

var (
	wrkTotalRE   = regexp.MustCompile(`(?m)^\s*(\d+) requests in ([0-9.]+)(us|ms|s|m|h),`)
	wrkRPSRE     = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	wrkPctRE     = regexp.MustCompile(`(?m)^\s+(50|99)(?:\.0+)?%\s+([0-9.]+)(us|ms|s|m|h)\s*$`)
	wrkNon2xxRE  = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses:\s+(\d+)`)
	wrkSocketsRE = regexp.MustCompile(`(?m)^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// parseWrk reads wrk's report (run with --latency).
func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	m := wrkTotalRE.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("wrk output has no \"N requests in T\" line")
	}
	r.Requests, _ = strconv.ParseInt(m[1], 10, 64)
	d, err := durationUs(m[2], m[3])
	if err != nil {
		return r, err
	}
	r.Seconds = d / 1e6
	m = wrkRPSRE.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("wrk output has no Requests/sec line")
	}
	r.RPS, _ = strconv.ParseFloat(m[1], 64)
	found := map[string]bool{}
	for _, m := range wrkPctRE.FindAllStringSubmatch(out, -1) {
		us, err := durationUs(m[2], m[3])
		if err != nil {
			return r, err
		}
		if m[1] == "50" {
			r.P50Us = us
		} else {
			r.P99Us = us
		}
		found[m[1]] = true
	}
	if !found["50"] || !found["99"] {
		return r, fmt.Errorf("wrk output has no 50%%/99%% latency lines (run it with --latency)")
	}
	if m := wrkNon2xxRE.FindStringSubmatch(out); m != nil {
		r.Non2xx, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := wrkSocketsRE.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(s, 10, 64)
			r.SocketErrors += n
		}
	}
	return r, nil
}

// durationUs converts one of wrk's durations ("151.00us", "1.20ms", "5.00s") to microseconds.
func durationUs(num, unit string) (float64, error) {
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("wrk duration %q: %v", num+unit, err)
	}
	mult := map[string]float64{"us": 1, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}[unit]
	return v * mult, nil
}

// procCPUTicks is utime+stime of a process, in clock ticks.
func procCPUTicks(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(string(raw))
}

// parseProcStatCPU returns fields 14 and 15 (utime, stime) of a /proc/<pid>/stat line summed.
// The command name (field 2) is in parentheses and may contain spaces and parentheses, so
// fields are counted after its last ')'.
func parseProcStatCPU(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat without a command name: %q", trim(stat, 80))
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat too short: %q", trim(stat, 200))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc stat utime/stime: %q %q", f[11], f[12])
	}
	return utime + stime, nil
}

// clockTicks is sysconf(_SC_CLK_TCK), from getconf (100 when getconf is missing: the value
// of every Linux architecture Go supports).
func clockTicks() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 100
}
