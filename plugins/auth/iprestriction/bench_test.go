package iprestriction

import (
	"fmt"
	"testing"

	"github.com/moeproxy/moe/shared/api"
)

// BenchmarkOnReceive measures the plugin per request against a pass-through
// filter run through the same fake context (the baseline).
func BenchmarkOnReceive(b *testing.B) {
	// 1000 /24s in the allow list: realistic for a large office/VPN list.
	var big []string
	for i := 0; i < 1000; i++ {
		big = append(big, fmt.Sprintf("10.%d.%d.0/24", i/256, i%256))
	}
	bigJSON := "{\"allow\":[" + joinQuoted(big) + "]}"
	cases := []struct {
		name, config, remote string
		xff                  string
	}{
		{"baseline-passthrough", "", "10.0.0.1:1234", ""},
		{"allow-1-cidr-hit", `{"allow":["10.0.0.0/8"]}`, "10.0.0.1:1234", ""},
		{"allow-1000-cidrs-hit", bigJSON, "10.3.200.1:1234", ""},
		{"allow-1000-cidrs-miss-403", bigJSON, "192.0.2.1:1234", ""},
		{"deny-ipv6-hit-403", `{"deny":["2001:db8::/32"]}`, "[2001:db8::1]:1234", ""},
		{"xff-2-hops-allow", `{"allow":["192.0.2.0/24"],"xff_num_trusted_hops":2}`, "127.0.0.1:1", "6.6.6.6, 192.0.2.1, 10.0.0.1"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var f api.ReceiverFilter = api.PassThroughFilter{}
			if tc.config != "" {
				c, _ := parse(b, tc.config)
				f = filterOf(c)
			}
			req := newReq()
			if tc.xff != "" {
				req.Add("x-forwarded-for", tc.xff)
			}
			ctx := newCtx(tc.remote, req)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx.Replied = nil
				f.OnReceive(ctx, req, nil, nil)
			}
		})
	}
}

func joinQuoted(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += `"` + v + `"`
	}
	return out
}
