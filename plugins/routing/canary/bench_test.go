package canary

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// BenchmarkDecide: the plugin's own decision (key lookup, hash, rendezvous
// over the targets), without the framework's header writes and state, next
// to a pass-through filter on the same fake context.
func BenchmarkDecide(b *testing.B) {
	two := `{"keys":["$header_x-user-id"],"targets":[{"name":"stable","cluster":"a","weight":90},{"name":"canary","cluster":"b","weight":10}]}`
	five := `{"keys":["$header_x-user-id"],"targets":[{"name":"a","cluster":"a","weight":60},{"name":"b","cluster":"b","weight":10},{"name":"c","cluster":"c","weight":10},{"name":"d","cluster":"d","weight":10},{"name":"e","cluster":"e","weight":10}]}`
	req := fakeframework.NewRequest("GET", "/", "x-user-id", "user-28", "cookie", "a=1; moe_canary=canary")
	ctx := fakeframework.NewContext(Name, req)
	b.Run("baseline-passthrough", func(b *testing.B) {
		var f api.ReceiverFilter = api.PassThroughFilter{}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			f.OnReceive(ctx, req, nil, nil)
		}
	})
	for _, tc := range []struct{ name, config string }{
		{"key-2-targets", two},
		{"key-5-targets", five},
		{"override-header-absent-then-cookie-then-key", full},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, _ := parse(b, tc.config)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.decide(ctx, req)
			}
		})
	}
}
