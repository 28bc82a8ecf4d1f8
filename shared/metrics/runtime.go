package metrics

import (
	"os"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Runtime metrics: the Go side of the process, so that users and tests can see goroutines and
// heap return to their idle values after load (a leak shows as a gauge that stays up), and
// what the GC costs.
//
//	moe_runtime_goroutines       goroutines (runtime.NumGoroutine)
//	moe_runtime_heap_bytes       heap object bytes: live ones and dead ones not yet swept
//	                             (runtime.MemStats.HeapAlloc); drops when the GC runs
//	moe_runtime_heap_live_bytes  heap bytes the last GC found live (a leak keeps it up)
//	moe_runtime_sys_bytes        memory the Go runtime holds from the OS (its share of RSS)
//	moe_runtime_heap_goal_bytes  heap size the GC aims to end its next cycle at: about the
//	                             live heap x (1 + GOGC/100), at least 4 MB x GOGC/100, lower
//	                             near GOMEMLIMIT; shows what those settings in Envoy's
//	                             environment do
//	moe_runtime_gc_cycles_total  counter: GC cycles completed (its rate over the request
//	                             rate is what GC tuning changes, see README "Deploying")
//
// They are sampled, not computed per request, and the sampler costs nothing while moe is idle:
//
//   - it runs while requests flow: a new stream (Activity, one atomic load on the request
//     path) or a config load (Bind) wakes it; it then samples every second
//     (MOE_RUNTIME_SAMPLE_INTERVAL);
//   - after the last request it keeps sampling for a trailing period, until runtimeSettle
//     samples in a row found the values unchanged (goroutines and GC cycles equal, heap
//     within 1%) — what finishes shortly after the load (streams destroyed, goroutines
//     returning, idle connections closed) is seen — or for runtimeMaxTrail at most; then it
//     parks.
//
// So at rest the gauges hold the settled idle values. Something that changes later without any
// request (an idle connection closed by a timeout minutes afterwards) shows at the next
// request or config load. A sample reads runtime/metrics (no stop-the-world, no allocation)
// and changes a gauge only when its value changed.
const (
	RuntimeGoroutines    = "moe_runtime_goroutines"
	RuntimeHeapBytes     = "moe_runtime_heap_bytes"
	RuntimeHeapLiveBytes = "moe_runtime_heap_live_bytes"
	RuntimeSysBytes      = "moe_runtime_sys_bytes"
	RuntimeHeapGoalBytes = "moe_runtime_heap_goal_bytes"
	RuntimeGCCycles      = "moe_runtime_gc_cycles_total"
)

// RuntimeSampleIntervalEnv sets the time between two samples of the runtime gauges while the
// sampler runs (a Go duration; default 1s).
const RuntimeSampleIntervalEnv = "MOE_RUNTIME_SAMPLE_INTERVAL"

// rtInterval is that time in nanoseconds (atomic: tests change it while the sampler runs).
var rtInterval atomic.Int64

func init() { rtInterval.Store(int64(durationFromEnv(RuntimeSampleIntervalEnv, time.Second))) }

const (
	// runtimeSettle: samples in a row without a request and without change before parking.
	runtimeSettle = 3
	// runtimeMaxTrail bounds the trailing period in samples, for values that never settle
	// (a plugin's background goroutine allocating without requests).
	runtimeMaxTrail = 60
)

func durationFromEnv(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

var (
	rtActivity atomic.Bool // a request or config load since the sampler last looked
	rtWake     = make(chan struct{}, 1)
	rtOnce     sync.Once
	rtSamples  atomic.Uint64 // samples taken (tests see the sampler park)
	rtParked   atomic.Bool   // waiting for activity
)

// Activity tells the runtime sampler that requests are flowing (the filter manager calls it
// for every new stream). While the sampler runs it costs one atomic load.
func Activity() {
	if rtActivity.Load() {
		return
	}
	rtActivity.Store(true)
	rtOnce.Do(startRuntimeSampler)
	select {
	case rtWake <- struct{}{}:
	default:
	}
}

func startRuntimeSampler() { go runtimeSampler() }

type runtimeSample struct {
	goroutines, heap, live, sys, goal, gcCycles uint64
}

// settled: no change worth another look (goroutines, live heap and GC cycles exact, heap and
// memory within 1%).
func (s runtimeSample) settled(prev runtimeSample) bool {
	near := func(a, b uint64) bool {
		d := a - b
		if b > a {
			d = b - a
		}
		return d*100 <= max(a, b)
	}
	return s.goroutines == prev.goroutines && s.live == prev.live && s.gcCycles == prev.gcCycles &&
		near(s.heap, prev.heap) && near(s.sys, prev.sys)
}

type runtimeGauges struct {
	descs                             []rtmetrics.Sample
	goroutines, heap, live, sys, goal *gauge
	gcCycles                          *counter
	last                              runtimeSample
	first                             bool
}

func newRuntimeGauges() *runtimeGauges {
	return &runtimeGauges{
		descs: []rtmetrics.Sample{
			{Name: "/sched/goroutines:goroutines"},
			{Name: "/memory/classes/heap/objects:bytes"},
			{Name: "/gc/heap/live:bytes"},
			{Name: "/memory/classes/total:bytes"},
			{Name: "/gc/heap/goal:bytes"},
			{Name: "/gc/cycles/total:gc-cycles"},
		},
		goroutines: Gauge(RuntimeGoroutines).(*gauge),
		heap:       Gauge(RuntimeHeapBytes).(*gauge),
		live:       Gauge(RuntimeHeapLiveBytes).(*gauge),
		sys:        Gauge(RuntimeSysBytes).(*gauge),
		goal:       Gauge(RuntimeHeapGoalBytes).(*gauge),
		gcCycles:   Counter(RuntimeGCCycles).(*counter),
		first:      true,
	}
}

func (r *runtimeGauges) sample() runtimeSample {
	rtmetrics.Read(r.descs)
	u := func(i int) uint64 {
		if r.descs[i].Value.Kind() != rtmetrics.KindUint64 {
			return 0 // not in this Go version
		}
		return r.descs[i].Value.Uint64()
	}
	s := runtimeSample{goroutines: u(0), heap: u(1), live: u(2), sys: u(3), goal: u(4), gcCycles: u(5)}
	set := func(g *gauge, v, old uint64) {
		if r.first || v != old {
			g.Set(v)
		}
	}
	set(r.goroutines, s.goroutines, r.last.goroutines)
	set(r.heap, s.heap, r.last.heap)
	set(r.live, s.live, r.last.live)
	set(r.sys, s.sys, r.last.sys)
	set(r.goal, s.goal, r.last.goal)
	// The counter gets the cycles since the last sample (all of them at the first: the
	// process's cycles so far, those of its start included).
	if s.gcCycles > r.last.gcCycles {
		r.gcCycles.Inc(s.gcCycles - r.last.gcCycles)
	}
	r.last, r.first = s, false
	rtSamples.Add(1)
	return s
}

func runtimeSampler() {
	r := newRuntimeGauges()
	for {
		rtParked.Store(true)
		<-rtWake
		rtParked.Store(false)
		rtActivity.Store(false)
		prev := r.sample()
		quiet, trail := 0, 0
		for quiet < runtimeSettle && trail < runtimeMaxTrail {
			time.Sleep(time.Duration(rtInterval.Load()))
			select { // a wake sent while running is this round's
			case <-rtWake:
			default:
			}
			busy := rtActivity.Swap(false)
			s := r.sample()
			switch {
			case busy:
				quiet, trail = 0, 0
			case s.settled(prev):
				quiet++
				trail++
			default:
				quiet = 0
				trail++
			}
			prev = s
		}
	}
}
