package consumerrestriction

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// BenchmarkOnReceive: per-request cost against a pass-through filter run
// through the same fake context (the baseline).
func BenchmarkOnReceive(b *testing.B) {
	const rbac = `{"rules":[
		{"consumers":["*"],"methods":["GET","HEAD"]},
		{"groups":["admins"]},
		{"action":"deny","consumers":["*"],"paths":["/admin/*"]},
		{"groups":["admins"],"paths":["/admin/*"]}]}`
	cases := []struct {
		name, config string
		consumer     *api.Consumer
		method, path string
	}{
		{"baseline-passthrough", "", alice, "GET", "/things/1"},
		{"allow-by-group", `{"rules":[{"groups":["admins"]}]}`, alice, "GET", "/things/1"},
		{"rbac-4-rules-allow", rbac, bob, "GET", "/things/1?q=1"},
		{"rbac-4-rules-deny-403", rbac, bob, "GET", "/admin/users"},
		{"rbac-encoded-path-deny-403", rbac, bob, "GET", "/%61dmin/../admin/users"},
		{"no-consumer-401", `{"rules":[{"groups":["admins"]}]}`, nil, "GET", "/"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var f api.ReceiverFilter = api.PassThroughFilter{}
			if tc.config != "" {
				c, _ := parse(b, tc.config)
				f = filterOf(c)
			}
			ctx := fakeframework.NewContext(Name, fakeframework.NewRequest(tc.method, tc.path))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx.Reset()
				ctx.SetConsumer(tc.consumer)
				f.OnReceive(ctx, ctx.Req, nil, nil)
			}
		})
	}
}
