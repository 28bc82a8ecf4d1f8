package expr_test

import (
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/expr"
)

// FuzzCompile: any text is compiled (and type-checked) as a CEL condition
// and as a string expression, or refused with an error; what compiles
// evaluates over a request without panicking and, bounded by the cost
// limit, quickly: no expression may stall Envoy's worker thread.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`request.method == "POST"`,
		`request.headers["x-user"] == "alice" && source.ip.startsWith("192.")`,
		`request.query_params["tenant"] + "-" + consumer.name`,
		`request.headers.exists(k, k.startsWith("x-m"))`,
		`size(request.cookies) == 2 || request.cookies[?"theme"].orValue("x") == "dark"`,
		`request.path.matches("^/orders/[0-9]+")`,
		`[1,2,3].map(x, [1,2,3].map(y, x*y)).size() > 0`,
		`request.path.split("/").size() > 2`,
		`vars["route_name"] + xds.cluster_name`,
		`response.code >= 500 && response.headers["retry-after"] == "2"`,
		`"a".repeat(10)`,
		`int(source.port) + 1 > 0`,
		`has(request.headers.x)`,
		`request.host.lowerAscii()`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 2048 {
			t.Skip()
		}
		if b, err := expr.CompileBool(src); err == nil {
			start := time.Now()
			_, _ = b.Eval(ctx())
			if d := time.Since(start); d > time.Second {
				t.Fatalf("%q evaluated in %v", src, d)
			}
		} else if err.Error() == "" {
			t.Fatalf("empty error for %q", src)
		}
		if s, err := expr.CompileString(src); err == nil {
			start := time.Now()
			_, _ = s.Eval(ctx())
			if d := time.Since(start); d > time.Second {
				t.Fatalf("%q evaluated in %v", src, d)
			}
		}
	})
}
