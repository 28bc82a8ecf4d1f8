package sentinel

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// offer sends rps requests per second, evenly paced, for warm+d and returns
// the admitted rate per second of the requests offered during d (after warm)
// and of all of them. Each request runs in a goroutine of its own, as in Envoy:
// a throttled request waits in the plugin for its turn, and a caller that
// waited for it before offering the next one would offer less than rps on a
// busy machine (sleeps overshoot) and measure its own pace, not the rule's.
func offer(c *Config, rps int, warm, d time.Duration, mk func() *fakeCtx) (steady, whole float64) {
	tick := time.NewTicker(time.Second / time.Duration(rps))
	defer tick.Stop()
	var total, measured atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	var measureStart time.Time
	for time.Since(start) < warm+d {
		<-tick.C
		counted := time.Since(start) >= warm
		if counted && measureStart.IsZero() {
			measureStart = time.Now()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if request(c, mk(), 200, 0) == nil {
				total.Add(1)
				if counted {
					measured.Add(1)
				}
			}
		}()
	}
	measuredFor, ranFor := time.Since(measureStart), time.Since(start)
	wg.Wait()
	return float64(measured.Load()) / measuredFor.Seconds(), float64(total.Load()) / ranFor.Seconds()
}

// TestAdmittedRateIsAccurate offers 200 rps to a 50 qps rule for 5 s, with
// sentinel's real clock, and requires the admitted rate within 10% of 50.
// The first second is not counted: with no history any window limiter admits
// one full window (50) at once, which would add up to 20% to a 5 s figure
// without saying anything about the steady rate.
func TestAdmittedRateIsAccurate(t *testing.T) {
	if testing.Short() {
		t.Skip("6 s accuracy run")
	}
	c, _ := load(t, `{"namespace":"accuracy","flow":[{"threshold":50}]}`)
	steady, whole := offer(c, 200, time.Second, 5*time.Second, func() *fakeCtx { return newCtx("r") })
	t.Logf("offered 200 rps to a 50 qps rule: admitted %.1f/s over 5 s of steady state (%.1f%% off), %.1f/s including the first second",
		steady, 100*math.Abs(steady-50)/50, whole)
	if math.Abs(steady-50) > 5 {
		t.Fatalf("admitted %.1f/s, want 50 ±10%%", steady)
	}
}

// TestThrottlingRateIsAccurate: a throttling (queueing) rule paces requests
// at its rate instead of bursting.
func TestThrottlingRateIsAccurate(t *testing.T) {
	if testing.Short() {
		t.Skip("2 s accuracy run")
	}
	c, _ := load(t, `{"namespace":"accuracy-throttle","flow":[{"threshold":50,"behavior":"throttling","max_queueing_time":"20ms"}]}`)
	rate, _ := offer(c, 200, 0, 2*time.Second, func() *fakeCtx { return newCtx("r") })
	t.Logf("offered 200 rps for 2s to a 50 qps throttling rule: admitted %.1f/s", rate)
	if math.Abs(rate-50) > 5 {
		t.Fatalf("admitted %.1f/s, want 50 ±10%%", rate)
	}
}
