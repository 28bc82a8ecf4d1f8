package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

const gaugeSampleEvery = 50 * time.Millisecond

// The runtime gauges through the real host: goroutines a request leaves behind (stray
// goroutines living 300ms after their request) show, and the gauge returns to its idle value
// with no further request, because the sampler keeps looking for a while after the load.
func TestE2ERuntimeGaugesReturnToIdleAfterTheLoad(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join(hosttest.RepoRoot(t), "shared/e2e/testdata/e2e.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	up := echo.Start(t, "backend")
	h := hosttest.Start(t, string(tmpl), hosttest.Vars{"Backend": up.Port, "PanicAsync": false},
		hosttest.Options{Library: "libmoe-e2e.so", Listeners: listeners,
			Env: []string{metrics.RuntimeSampleIntervalEnv + "=" + gaugeSampleEvery.String()}})
	c := &http.Client{Timeout: 10 * time.Second}
	const n = 40
	load := func() {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if st, _, body := hosttest.Fetch(t, c, h.URL+"/stray", "x-e2e-stray", "1"); st != 200 {
					t.Errorf("stray request: %d %s", st, body)
				}
			}()
		}
		wg.Wait()
	}
	// Warm up until a GC ran: the first load and the first GC set up what stays (threads
	// entering Go, pools, caches, the runtime's own goroutines).
	var base hosttest.Usage
	for i := 0; i < 20 && base.HeapLive == 0; i++ {
		load()
		base = h.SettledUsage(t, gaugeSampleEvery, 20*time.Second)
	}
	t.Logf("idle: %v", base)
	if base.Goroutines <= 0 || base.HeapBytes <= 0 || base.GoSys <= 0 || base.RSS <= 0 || base.FDs <= 0 {
		t.Fatalf("runtime gauges missing or zero on /stats: %+v", base)
	}

	load()
	peak := int64(0)
	for end := time.Now().Add(250 * time.Millisecond); time.Now().Before(end); time.Sleep(gaugeSampleEvery / 2) {
		peak = max(peak, h.Usage(t).Goroutines)
	}
	if peak < base.Goroutines+n/2 {
		t.Errorf("goroutine gauge peaked at %d after %d requests leaving a goroutine each (idle %d)", peak, n, base.Goroutines)
	}
	after := h.SettledUsage(t, gaugeSampleEvery, 20*time.Second)
	t.Logf("peak goroutines %d; settled: %v", peak, after)
	if after.Goroutines > base.Goroutines {
		t.Errorf("goroutines settled at %d, idle before the load %d", after.Goroutines, base.Goroutines)
	}
}
