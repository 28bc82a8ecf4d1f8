package limitreq

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// BenchmarkOnReceive: per-request cost against a pass-through filter run
// through the same fake context (the baseline).
func BenchmarkOnReceive(b *testing.B) {
	cases := []struct {
		name, config string
		keys         int // distinct x-user values cycled through (0: none)
	}{
		{"baseline-passthrough", "", 0},
		{"remote_addr-passed", `{"rate":1e9,"burst":1000000}`, 0},
		{"remote_addr-rejected-429", `{"rate":1}`, 0},
		{"header-key-10k-keys-passed", `{"rate":1e9,"burst":1000000,"key":"$header_x-user"}`, 10_000},
		{"composite-key-passed", `{"rate":1e9,"burst":1000000,"key":"$method:$header_x-user"}`, 100},
		{"header-key-flood-evicting", `{"rate":1e9,"burst":1000000,"key":"$header_x-user","max_keys":1000}`, 100_000},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var f api.ReceiverFilter = api.PassThroughFilter{}
			if tc.config != "" {
				c, _ := parse(b, tc.config, nil)
				f = filterOf(c)
			}
			ctxs := make([]*fakeframework.Context, max(tc.keys, 1))
			for i := range ctxs {
				ctxs[i] = newCtx("192.0.2.1:5555", newReq("x-user", fmt.Sprintf("user-%d", i)))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx := ctxs[i%len(ctxs)]
				ctx.Replied = nil
				f.OnReceive(ctx, ctx.Req, nil, nil)
			}
		})
	}
}

// BenchmarkOnReceiveParallel: contention on the bucket cache from all cores.
func BenchmarkOnReceiveParallel(b *testing.B) {
	for _, tc := range []struct{ name, config string }{
		{"baseline-passthrough", ""},
		{"one-hot-key", `{"rate":1e9,"burst":1000000}`},
		{"spread-keys", `{"rate":1e9,"burst":1000000,"key":"$header_x-user"}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var f api.ReceiverFilter = api.PassThroughFilter{}
			if tc.config != "" {
				c, _ := parse(b, tc.config, nil)
				f = filterOf(c)
			}
			var id atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := newCtx("192.0.2.1:5555", newReq("x-user", fmt.Sprintf("user-%d", id.Add(1))))
				for pb.Next() {
					ctx.Replied = nil
					f.OnReceive(ctx, ctx.Req, nil, nil)
				}
			})
		})
	}
}
