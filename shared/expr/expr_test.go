package expr_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/expr"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func ctx() *fakeframework.Context {
	req := fakeframework.NewRequest("POST", "/orders/42?tenant=t%201&x=1&x=2",
		"x-user", "alice", "x-multi", "a", "x-multi", "b", "cookie", "session=s1; theme=dark")
	c := fakeframework.NewContext("p", req).From("192.0.2.7:5555")
	c.RouteName, c.Cluster = "orders", "orders-v2"
	c.SetConsumer(&api.Consumer{Name: "alice", Group: "admins", Attributes: map[string]string{"tier": "gold"}})
	return c
}

func TestConditionsSeeTheRequest(t *testing.T) {
	for _, src := range []string{
		`request.method == "POST"`,
		`request.path == "/orders/42?tenant=t%201&x=1&x=2"`,
		`request.url_path == "/orders/42" && request.url_path.startsWith("/orders/")`,
		`request.query.contains("tenant=")`,
		`request.host == "example.com" && request.scheme == "http"`,
		`request.headers["x-user"] == "alice"`,
		`request.headers["X-User"] == "alice"`,
		`request.headers["x-multi"] == "a,b"`,
		`"x-user" in request.headers && !("x-absent" in request.headers)`,
		`request.headers[?"x-absent"].orValue("none") == "none"`,
		`request.query_params["tenant"] == "t 1" && request.query_params["x"] == "1"`,
		`request.cookies["theme"] == "dark" && !("nope" in request.cookies)`,
		`source.address == "192.0.2.7:5555" && source.ip == "192.0.2.7" && source.port == 5555`,
		`xds.route_name == "orders" && xds.cluster_name == "orders-v2"`,
		`consumer.name == "alice" && consumer.group == "admins" && consumer.attributes["tier"] == "gold"`,
		`vars["header_x-user"] == "alice" && vars["route_name"] == "orders" && vars["remote_addr"] == "192.0.2.7"`,
		`request.headers.exists(k, k.startsWith("x-m"))`,
		`size(request.cookies) == 2`,
		`response.code == 0 && size(response.headers) == 0`,
		`request.id == "test-request"`,
	} {
		t.Run(src, func(t *testing.T) {
			b, err := expr.CompileBool(src)
			if err != nil {
				t.Fatal(err)
			}
			ok, err := b.Eval(ctx())
			if err != nil || !ok {
				t.Fatalf("= %v, %v; want true", ok, err)
			}
		})
	}
}

func TestResponseAttributes(t *testing.T) {
	c := ctx().WithResponse(fakeframework.NewResponse(503, "retry-after", "2"))
	b, err := expr.CompileBool(`response.code >= 500 && response.headers["retry-after"] == "2"`)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Eval(c); !ok || err != nil {
		t.Fatalf("= %v %v", ok, err)
	}
}

func TestStringExpressions(t *testing.T) {
	s, err := expr.CompileString(`consumer.name + "@" + request.headers[?"x-tenant"].orValue("default")`)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Eval(ctx()); v != "alice@default" || err != nil {
		t.Fatalf("= %q %v", v, err)
	}
}

func TestCompileErrorsSayWhereAndWhy(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`sourc.ip == "1"`, "line 1, column 6: undeclared reference to 'sourc.ip' (did you mean 'source.ip'?)"},
		{`request.method == `, "line 1, column 19: Syntax error"},
		{`request.method`, "the expression is string, want bool"},
		{`request.headers["x"] == 1`, "line 1, column 22: found no matching overload for '_==_'"},
		{``, "empty expression"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			_, err := expr.CompileBool(tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := expr.CompileString(`request.method == "GET"`); err == nil || !strings.Contains(err.Error(), "want string") {
		t.Fatalf("string from bool: %v", err)
	}
}

func TestRuntimeErrorsAreFalseWithAnError(t *testing.T) {
	b, _ := expr.CompileBool(`request.headers["x-absent"] == "1"`)
	if ok, err := b.Eval(ctx()); ok || err == nil || !strings.Contains(err.Error(), "no such key") {
		t.Fatalf("= %v %v; want false and a no-such-key error", ok, err)
	}
}

func TestCostLimitStopsARunawayExpression(t *testing.T) {
	c := ctx()
	// Far beyond any header Envoy accepts (60 KiB by default): string work is
	// charged per byte, so the limit stops it.
	c.Req.Set("x-big", strings.Repeat("a", 4<<20))
	b, err := expr.CompileBool(`request.headers["x-big"].contains("b") || request.headers["x-big"].endsWith("b")`)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Eval(c); ok || err == nil || !strings.Contains(err.Error(), "cost") {
		t.Fatalf("= %v %v; want the cost limit", ok, err)
	}
}

type withExpr struct {
	When  *expr.Bool   `json:"when"`
	Value *expr.String `json:"value"`
}

func TestFieldsCompileWhileDecoding(t *testing.T) {
	var w withExpr
	if err := json.Unmarshal([]byte(`{"when": "consumer.name == 'alice'", "value": "request.method"}`), &w); err != nil {
		t.Fatal(err)
	}
	if ok, _ := w.When.Eval(ctx()); !ok {
		t.Fatal("when")
	}
	if v, _ := w.Value.Eval(ctx()); v != "POST" {
		t.Fatalf("value %q", v)
	}
	if err := json.Unmarshal([]byte(`{"when": "nope"}`), &w); err == nil || !strings.Contains(err.Error(), "undeclared reference to 'nope'") {
		t.Fatalf("bad expression accepted: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"when": 3}`), &w); err == nil || !strings.Contains(err.Error(), "expected a CEL expression") {
		t.Fatalf("number accepted: %v", err)
	}
}

func BenchmarkEval(b *testing.B) {
	for _, tc := range []struct{ name, src string }{
		{"method", `request.method == "POST"`},
		{"header", `request.headers["x-user"] == "alice"`},
		{"header-and-consumer", `request.headers["x-user"] == "alice" && consumer.group == "admins" && request.url_path.startsWith("/orders/")`},
		{"var", `vars["header_x-user"] == "alice"`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p, err := expr.CompileBool(tc.src)
			if err != nil {
				b.Fatal(err)
			}
			c := ctx()
			b.ReportAllocs()
			for b.Loop() {
				if ok, _ := p.Eval(c); !ok {
					b.Fatal("false")
				}
			}
		})
	}
}
