package cors

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// BenchmarkFilter: the plugin's own work per request (OnReceive + Append on
// the fake framework), without the chain around it.
func BenchmarkFilter(b *testing.B) {
	c, _ := parse(b, appConfig)
	f := (*filter)(c)
	for _, tc := range []struct {
		name string
		req  *fakeframework.Request
	}{
		{"actual-request-exact-origin", fakeframework.NewRequest("GET", "/", "origin", "https://app.example.com")},
		{"actual-request-wildcard-origin", fakeframework.NewRequest("GET", "/", "origin", "https://a.b.example.org")},
		{"actual-request-disallowed-regex-tried", fakeframework.NewRequest("GET", "/", "origin", "https://evil.test")},
		{"no-origin", fakeframework.NewRequest("GET", "/")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			resp := fakeframework.NewResponse(200)
			ctx := fakeframework.NewContext(Name, tc.req).WithResponse(resp)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f.OnReceive(ctx, tc.req, nil, nil)
				resp.Headers = api.Headers{":status": {"200"}}
				f.Append(ctx, resp, nil, nil)
			}
		})
	}
	b.Run("preflight-allowed", func(b *testing.B) {
		req := preflight("https://app.example.com", "PUT", "content-type,x-request-id")
		fakeframework.Bench(b, Name, f, req, api.Stop)
	})
}
