package limitcount

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// offer sends rps requests per second for dur (each in its own goroutine,
// paced by a ticker) and returns the start offsets of the admitted ones and
// the number of rejected and other answers.
func offer(t *testing.T, do func() int, rps int, dur time.Duration) (admitted []time.Duration, rejected, other int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rps))
	defer tick.Stop()
	start := time.Now()
	for i := 0; i < int(dur.Seconds()*float64(rps)); i++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := time.Since(start)
			code := do()
			mu.Lock()
			defer mu.Unlock()
			switch code {
			case 200:
				admitted = append(admitted, at)
			case 429:
				rejected++
			default:
				other++
			}
		}()
	}
	wg.Wait()
	sort.Slice(admitted, func(i, j int) bool { return admitted[i] < admitted[j] })
	return admitted, rejected, other
}

// maxInAnySecond is the most admissions in any 1s interval: the burst a
// backend sees at worst (fixed windows allow up to 2x around a boundary).
func maxInAnySecond(at []time.Duration) int {
	best, j := 0, 0
	for i := range at {
		for at[i]-at[j] >= time.Second {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// TestAccuracy offers 200 rps for 5 s against 50 requests per 1 s window,
// through the real filter manager and a real Redis, and requires the
// admitted rate within 10% of 50/s. The sliding run starts on a window
// boundary of Redis' clock: a key without history behaves like a fixed
// window in its first window, so a start late in a window would add up to
// one window's count more on a run this short.
func TestAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 5 s")
	}
	r := startRedis(t)
	const rps, limit, seconds = 200, 50, 5
	for _, window := range []string{"fixed", "sliding"} {
		t.Run(window, func(t *testing.T) {
			t.Parallel()
			run := runner(t, cfgFor(r, map[string]any{"count": limit, "time_window": "1s", "window": window, "key_prefix": "acc-" + window + ":"}))
			if window == "sliding" {
				waitForWindowOffset(t, r, 1000, 0, false)
			}
			at, rejected, other := offer(t, func() int {
				return run.Do(fakeenvoy.Request{RemoteAddr: "192.0.2.7:1234"}).Status
			}, rps, seconds*time.Second)
			rate := float64(len(at)) / seconds
			t.Logf("%s window: offered %d rps for %ds against %d/1s: admitted %d (%.1f/s, %+.1f%% of the limit), rejected %d, other %d; at most %d admitted in any 1s",
				window, rps, seconds, limit, len(at), rate, 100*(rate-limit)/limit, rejected, other, maxInAnySecond(at))
			if other != 0 {
				t.Errorf("%d answers neither 200 nor 429", other)
			}
			if rate < limit*0.9 || rate > limit*1.1 {
				t.Errorf("admitted %.1f/s, want within 10%% of %d/s", rate, limit)
			}
		})
	}
}
