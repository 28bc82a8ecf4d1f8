package all_test

import (
	"encoding/json"
	"testing"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// standardChainPlugins is the standard chain of the performance issue, as
// configured in crossings_e2e_test.go: requests pass every plugin.
var standardChainPlugins = []map[string]any{
	{"name": "limit-req", "config": map[string]any{"rate": 1e6, "burst": 1e6}},
	{"name": "key-auth", "config": map[string]any{"sources": []string{"header:x-api-key"},
		"consumers": []map[string]any{{"name": "alice", "keys": []string{"alice-secret-key"}}}}},
	{"name": "consumer-restriction", "config": map[string]any{"rules": []map[string]any{{"consumers": []string{"alice"}}}}},
	{"name": "sentinel", "config": map[string]any{"resource": "$route_name", "flow": []map[string]any{{"threshold": 1e12}}}},
	{"name": "ip-restriction", "config": map[string]any{"allow": []string{"10.0.0.0/8", "127.0.0.0/8"}}},
}

// BenchmarkStandardChain is a whole headers-only request through the standard
// chain on the lean fake Envoy, against the empty chain in the same run.
func BenchmarkStandardChain(b *testing.B) {
	for _, tc := range []struct {
		name    string
		plugins []map[string]any
	}{
		{"empty", nil},
		{"standard-5", standardChainPlugins},
	} {
		b.Run(tc.name, func(b *testing.B) {
			raw, _ := json.Marshal(map[string]any{"plugins": tc.plugins})
			cfg, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, string(raw))
			if err != nil {
				b.Fatal(err)
			}
			fb := fakeenvoy.NewBench(filtermanager.Factory, cfg, [2]string{"x-api-key", "alice-secret-key"})
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if st := fb.Run(); st != envoy.Continue {
					b.Fatalf("status %d", st)
				}
			}
		})
	}
}
