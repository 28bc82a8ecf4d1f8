package metrics_test

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/testing/tb"
)

const sampleEvery = 10 * time.Millisecond

// waitFor polls cond for up to d (the sampler and the flusher are asynchronous).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !tb.Poll(d, cond) {
		t.Fatalf("after %v: %s", d, what)
	}
}

func gaugeValue(name string) int64 { return int64(fakeenvoy.Stats.Gauge(name)) }

// waitParked waits until the sampler has parked and stays parked: no sample for 20 intervals.
func waitParked(t *testing.T) {
	t.Helper()
	waitFor(t, 10*time.Second, "the runtime sampler never parked", func() bool {
		if !metrics.RuntimeParked() {
			return false
		}
		n := metrics.RuntimeSamples()
		time.Sleep(20 * sampleEvery)
		return metrics.RuntimeParked() && metrics.RuntimeSamples() == n
	})
}

// While requests flow the gauges follow goroutines; after the last one they settle to the idle
// values and the sampler parks: nothing runs while idle.
func TestRuntimeGaugesFollowGoroutinesAndSettleWhenIdle(t *testing.T) {
	defer metrics.SetRuntimeSampleInterval(sampleEvery)()
	metrics.Activity()
	waitParked(t)
	base := gaugeValue(metrics.RuntimeGoroutines)
	if base <= 0 {
		t.Fatalf("%s = %d at rest, want the goroutine count", metrics.RuntimeGoroutines, base)
	}
	if sys := gaugeValue(metrics.RuntimeSysBytes); sys <= 0 {
		t.Fatalf("%s = %d", metrics.RuntimeSysBytes, sys)
	}

	release := make(chan struct{})
	const extra = 100
	for range extra {
		go func() { <-release }()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // "requests" keep flowing
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(sampleEvery / 2):
				metrics.Activity()
			}
		}
	}()
	waitFor(t, 5*time.Second, "goroutine gauge never saw the extra goroutines", func() bool {
		return gaugeValue(metrics.RuntimeGoroutines) >= base+extra
	})
	if metrics.RuntimeParked() {
		t.Errorf("sampler parked while requests flow")
	}
	close(stop)
	<-done
	close(release) // the load's goroutines end after its last request

	// The trailing samples see them go without any further request.
	waitFor(t, 5*time.Second, "goroutine gauge did not return to its idle value", func() bool {
		return gaugeValue(metrics.RuntimeGoroutines) <= base+2
	})
	waitParked(t)
	if g := gaugeValue(metrics.RuntimeGoroutines); g > base+2 {
		t.Errorf("parked with %s = %d, idle value %d", metrics.RuntimeGoroutines, g, base)
	}
}

var retained [][]byte

func TestRuntimeHeapGaugesSeeAllocationAndCollection(t *testing.T) {
	defer metrics.SetRuntimeSampleInterval(sampleEvery)()
	runtime.GC()
	metrics.Activity()
	waitParked(t)
	baseLive := gaugeValue(metrics.RuntimeHeapLiveBytes)
	baseCycles := fakeenvoy.Stats.Counter(metrics.RuntimeGCCycles)
	if baseCycles == 0 {
		t.Errorf("%s = 0 after a runtime.GC", metrics.RuntimeGCCycles)
	}

	const size = 64 << 20
	for range 64 {
		retained = append(retained, make([]byte, size/64))
	}
	runtime.GC() // the live heap is what a GC found
	metrics.Activity()
	waitFor(t, 5*time.Second, "heap gauges never saw 64 MiB more", func() bool {
		return gaugeValue(metrics.RuntimeHeapBytes) >= size && gaugeValue(metrics.RuntimeHeapLiveBytes) >= baseLive+size*9/10
	})
	// The next cycle ends above what is live now: at about twice it with the default
	// GOGC=100 (only "above" when the environment sets GOGC). Polled, because the gauges
	// of one sample reach the store one by one.
	goalOver := func(live int64) int64 { return live + live/2 }
	if os.Getenv("GOGC") != "" {
		goalOver = func(live int64) int64 { return live + 1 }
	}
	waitFor(t, 5*time.Second, "heap goal gauge never above the live heap", func() bool {
		return gaugeValue(metrics.RuntimeHeapGoalBytes) >= goalOver(gaugeValue(metrics.RuntimeHeapLiveBytes))
	})
	retained = nil
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	cyclesThen := int64(ms.NumGC)
	metrics.Activity()
	waitFor(t, 5*time.Second, "live heap gauge did not fall back after the GC", func() bool {
		return gaugeValue(metrics.RuntimeHeapLiveBytes) < baseLive+size/4
	})
	waitParked(t)
	// Two runtime.GC calls since the baseline (the GC may have run more often on its own),
	// and the counter is the runtime's own count: at least the cycles that had ended before
	// the sampler's last samples, at most those that have ended by now.
	got := int64(fakeenvoy.Stats.Counter(metrics.RuntimeGCCycles))
	if n := got - int64(baseCycles); n < 2 {
		t.Errorf("%s grew by %d over two runtime.GC calls", metrics.RuntimeGCCycles, n)
	}
	runtime.ReadMemStats(&ms)
	if got < cyclesThen || got > int64(ms.NumGC) {
		t.Errorf("%s = %d, the runtime counted %d cycles then and %d now", metrics.RuntimeGCCycles, got, cyclesThen, ms.NumGC)
	}
}

// Activity on the request path: one atomic load while the sampler runs.
func BenchmarkActivity(b *testing.B) {
	metrics.Activity()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			metrics.Activity()
		}
	})
}
