package ldcroute

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// BenchmarkResolve: the plugin's own work (user id lookup, slot, unit,
// fallback from the snapshot), without the framework's header writes and
// state, next to a pass-through filter on the same fake context.
func BenchmarkResolve(b *testing.B) {
	c, _ := parse(b, `{`+threeUnits+`}`)
	down, _ := parse(b, `{`+`"units": [
    {"name": "RZ01", "cluster": "rz01", "slots": ["0-29"], "fallback": ["RZ02", "RZ03"]},
    {"name": "RZ02", "cluster": "rz02", "slots": ["30-59"], "down": true, "fallback": ["RZ03", "RZ01"]},
    {"name": "RZ03", "cluster": "rz03", "slots": ["60-99"], "fallback": ["RZ01", "RZ02"]}],
    "uid": ["$header_x-uid"], "default_unit": "RZ01"}`)
	hash, _ := parse(b, `{"slot_by":"hash",`+threeUnits+`}`)
	req := fakeframework.NewRequest("GET", "/", "x-uid", "2088001234")
	ctx := fakeframework.NewContext(Name, req)
	b.Run("baseline-passthrough", func(b *testing.B) {
		var f api.ReceiverFilter = api.PassThroughFilter{}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			f.OnReceive(ctx, req, nil, nil)
		}
	})
	for _, tc := range []struct {
		name string
		c    *Config
	}{{"mod-home-unit", c}, {"mod-fallback", down}, {"hash-home-unit", hash}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				tc.c.resolve(ctx)
			}
		})
	}
}
