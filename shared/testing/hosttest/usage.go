package hosttest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// Usage is what a running host uses: from /proc/<pid> (the whole process, C++ and Go) and from
// the runtime gauges on admin /stats (the Go side; shared/metrics/runtime.go).
type Usage struct {
	RSS     int64 // resident set, bytes (VmRSS)
	FDs     int   // open file descriptors
	Threads int

	Goroutines int64 // moe_runtime_goroutines
	HeapBytes  int64 // moe_runtime_heap_bytes (live and not yet swept)
	HeapLive   int64 // moe_runtime_heap_live_bytes (live at the last GC)
	GoSys      int64 // moe_runtime_sys_bytes
}

func (u Usage) String() string {
	return fmt.Sprintf("rss %.1f MiB, fds %d, threads %d, goroutines %d, heap %.1f MiB (live %.1f MiB), go sys %.1f MiB",
		mib(u.RSS), u.FDs, u.Threads, u.Goroutines, mib(u.HeapBytes), mib(u.HeapLive), mib(u.GoSys))
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// Usage samples the host's usage now. The runtime gauges are as the sampler last saw them
// (at rest: the settled idle values).
func (h *Host) Usage(t tb.TB) Usage {
	t.Helper()
	u, err := ProcUsage(h.Pid())
	if err != nil {
		t.Fatalf("usage of moe-host: %v", err)
	}
	st := h.Stats(t)
	g := func(name string) int64 {
		v, _ := strconv.ParseInt(st[name], 10, 64)
		return v
	}
	u.Goroutines = g(metrics.RuntimeGoroutines)
	u.HeapBytes = g(metrics.RuntimeHeapBytes)
	u.HeapLive = g(metrics.RuntimeHeapLiveBytes)
	u.GoSys = g(metrics.RuntimeSysBytes)
	return u
}

// ProcUsage reads RSS, threads and open descriptors of process pid from /proc.
func ProcUsage(pid int) (Usage, error) {
	var u Usage
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			u.RSS = n << 10 // kB
		case "Threads":
			u.Threads = int(n)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return u, err
	}
	u.FDs = len(fds)
	return u, sc.Err()
}

// SettledUsage waits until the runtime gauges stop changing (the sampler parked at its idle
// values, shared/metrics/runtime.go) and returns the usage then. every is the host's sample
// interval (metrics.RuntimeSampleIntervalEnv); the gauges must agree on five looks two
// intervals apart within limit, or the test fails.
func (h *Host) SettledUsage(t tb.TB, every, limit time.Duration) Usage {
	t.Helper()
	deadline := time.Now().Add(limit)
	prev := h.Usage(t)
	for same := 0; same < 5; {
		if time.Now().After(deadline) {
			t.Fatalf("runtime gauges of moe-host never settled within %v: %v", limit, prev)
		}
		time.Sleep(2 * every)
		u := h.Usage(t)
		if u.Goroutines == prev.Goroutines && u.HeapLive == prev.HeapLive {
			same++
		} else {
			same = 0
		}
		prev = u
	}
	return prev
}
