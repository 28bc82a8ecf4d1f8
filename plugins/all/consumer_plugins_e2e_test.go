package all_test

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// Chain-level consumers through moe-host: defined once next to the plugins,
// identified by key-auth, and each with its own limit-req (a per-consumer
// plugin) over the chain's default.
func TestPerConsumerLimitsThroughTheHost(t *testing.T) {
	h := hosttest.StartChain(t, hosttest.Chain{
		Plugins: []hosttest.Plugin{
			{Name: "key-auth", Config: map[string]any{"sources": []string{"header:x-api-key"}}},
			// The chain's default: 2 requests per consumer, then 429 (no refill in the test).
			{Name: "limit-req", Config: map[string]any{"rate": 0.001, "burst": 2, "key": "$consumer"}},
		},
		Consumers: []any{
			map[string]any{"name": "gold", "group": "partners",
				"auth":    map[string]any{"key-auth": map[string]any{"keys": []string{"gold-key-0001"}}},
				"plugins": []any{map[string]any{"name": "limit-req", "config": map[string]any{"rate": 0.001, "burst": 5, "key": "$consumer"}}}},
			map[string]any{"name": "free",
				"auth": map[string]any{"key-auth": map[string]any{"keys": []string{"free-key-0001"}}}},
			map[string]any{"name": "internal",
				"auth":    map[string]any{"key-auth": map[string]any{"keys": []string{"internal-key-01"}}},
				"plugins": []any{map[string]any{"name": "limit-req", "disabled": true}}},
		},
	})
	admitted := func(key string, n int) int {
		ok := 0
		for i := 0; i < n; i++ {
			resp, body := hosttest.Get(t, h.URL+"/x", "x-api-key", key)
			switch resp.StatusCode {
			case 200:
				e := hosttest.DecodeEcho(t, resp)
				if e.Header("x-consumer-name") == "" {
					t.Fatalf("%s: upstream saw no consumer", key)
				}
				ok++
			case 429:
			default:
				t.Fatalf("%s: status %d %s", key, resp.StatusCode, body)
			}
		}
		return ok
	}
	for _, tc := range []struct {
		key  string
		want int
	}{{"gold-key-0001", 5}, {"free-key-0001", 2}, {"internal-key-01", 8}} {
		if got := admitted(tc.key, 8); got != tc.want {
			t.Errorf("%s: %d of 8 admitted, want %d", tc.key, got, tc.want)
		}
	}
	if resp, _ := hosttest.Get(t, h.URL+"/x"); resp.StatusCode != 401 {
		t.Errorf("no key: %d", resp.StatusCode)
	}
	if got := h.Counter(t, "moe_consumer_chains_total"); got != 16 {
		t.Errorf("moe_consumer_chains_total = %d, want 16 (gold's 8 and internal's 8 requests)", got)
	}
}
