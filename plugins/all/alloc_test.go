package all_test

import (
	"encoding/json"
	"runtime"
	"testing"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// TestStandardChainAllocations guards what a request through the standard chain allocates on
// the Go side (the lean fake Envoy, as BenchmarkStandardChain): the GC's share of a request
// grows with these bytes (issue 12: GC is the largest single cost of the first moe plugin in
// moe-host). Measured 2026-12-01: 8 allocations, 1353 bytes: the stream with room for the five
// plugins 1024 (it was 1152 with room for eight), six small ones by sentinel (five in
// sentinel-golang, one the plugin's per-request filter) and key-auth's header value. Before:
// 10 and 1593, with key-auth's list of pending header writes (192 bytes, now recycled) and the
// consumer's 48-byte shared state (now two flags in the stream). The bound has 40 bytes of
// slack for what sentinel-golang's background goroutines allocate meanwhile.
func TestStandardChainAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what is allocated")
	}
	raw, _ := json.Marshal(map[string]any{"plugins": standardChainPlugins})
	cfg, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, string(raw))
	if err != nil {
		t.Fatal(err)
	}
	fb := fakeenvoy.NewBench(filtermanager.Factory, cfg, [2]string{"x-api-key", "alice-secret-key"})
	run := func() {
		if st := fb.Run(); st != envoy.Continue {
			t.Fatalf("status %d", st)
		}
	}
	for i := 0; i < 100; i++ { // warm: lazily built caches, sentinel's first statistics
		run()
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 2000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		run()
	}
	runtime.ReadMemStats(&after)
	allocs := float64(after.Mallocs-before.Mallocs) / n
	bytes := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.2f allocations, %.0f bytes a request", allocs, bytes)
	if allocs > 8.1 || bytes > 1393 {
		t.Errorf("a standard-chain request allocates %.2f times, %.0f bytes; want at most 8 and 1353 (+40 slack)", allocs, bytes)
	}
}
