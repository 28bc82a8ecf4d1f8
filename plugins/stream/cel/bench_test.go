package cel

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// BenchmarkRules: the plugin's own work per request (fake framework), to
// see what one CEL evaluation costs without the chain around it.
func BenchmarkRules(b *testing.B) {
	req := fakeframework.NewRequest("GET", "/orders/42?debug=1", "x-tenant", "acme", "cookie", "canary=1; theme=dark")
	for _, tc := range []struct{ name, config string }{
		{"header-compare-not-matched", `{"rules":[{"when":"request.headers[?\"x-tenant\"].orValue(\"\") == \"evil\"","deny":{}}]}`},
		{"method-and-path", `{"rules":[{"when":"request.method == \"POST\" && request.url_path.startsWith(\"/admin\")","deny":{}}]}`},
		{"cookie-mark", `{"rules":[{"when":"request.cookies[?\"canary\"].orValue(\"\") == \"1\"","mark":"canary"}]}`},
		{"set-header-cel-value", `{"rules":[{"set_headers":[{"name":"x-key","expr":"request.method + \":\" + request.headers[\"x-tenant\"]"}]}]}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, _ := parse(b, tc.config)
			f := c.filter.(api.ReceiverFilter)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx := fakeframework.NewContext(Name, req)
				f.OnReceive(ctx, req, nil, nil)
			}
		})
	}
}
