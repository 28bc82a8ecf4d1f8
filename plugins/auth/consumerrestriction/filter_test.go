package consumerrestriction

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestOnReceive(t *testing.T) {
	const (
		allowAdmins = `{"rules":[{"groups":["admins"]}]}`
		denyBob     = `{"rules":[{"action":"deny","consumers":["bob"]}]}`
		rbac        = `{"rules":[
			{"consumers":["*"],"methods":["GET","HEAD"]},
			{"groups":["admins"]},
			{"action":"deny","consumers":["*"],"paths":["/admin/*"]},
			{"groups":["admins"],"paths":["/admin/*"],"action":"allow"}]}`
	)
	cases := []struct {
		name     string
		config   string
		consumer *api.Consumer
		method   string
		path     string
		status   int // 0: passed on
		counter  string
	}{
		{"no consumer is 401", allowAdmins, nil, "GET", "/", 401, "denied_no_consumer"},
		{"allowed by group", allowAdmins, alice, "GET", "/", 0, "allowed"},
		{"allow list denies the rest", allowAdmins, bob, "GET", "/", 403, "denied_default"},
		{"consumer without group denied", allowAdmins, carol, "GET", "/", 403, "denied_default"},
		{"deny list denies by name", denyBob, bob, "GET", "/", 403, "denied_rule"},
		{"deny list lets the rest through", denyBob, alice, "GET", "/", 0, "allowed"},
		{"explicit default deny", `{"rules":[{"action":"deny","consumers":["bob"]}],"default_action":"deny"}`, alice, "GET", "/", 403, "denied_default"},
		{"explicit default allow", `{"rules":[{"consumers":["bob"]}],"default_action":"allow"}`, alice, "GET", "/", 0, "allowed"},
		{"anonymous is not '*'", `{"rules":[{"consumers":["*"]}]}`, anon, "GET", "/", 401, "denied_default"},
		{"anonymous allowed by name", `{"rules":[{"consumers":["anonymous"],"methods":["GET"]}]}`, anon, "GET", "/", 0, "allowed"},
		{"anonymous denied by name is 401", `{"rules":[{"consumers":["anonymous"],"action":"deny"}]}`, anon, "GET", "/", 401, "denied_rule"},
		{"rbac: anyone may read", rbac, bob, "GET", "/things", 0, "allowed"},
		{"rbac: only admins write", rbac, bob, "POST", "/things", 403, "denied_default"},
		{"rbac: admins write", rbac, alice, "DELETE", "/things/1", 0, "allowed"},
		{"rbac: deny wins over allow for /admin/*", rbac, alice, "GET", "/admin/users", 403, "denied_rule"},
		{"rbac: /admin/* covers /admin", rbac, bob, "GET", "/admin", 403, "denied_rule"},
		{"rbac: /admin/* does not cover /administrator", rbac, bob, "GET", "/administrator", 0, "allowed"},
		{"rbac: query ignored", rbac, bob, "GET", "/admin?x=/ok", 403, "denied_rule"},
		{"rbac: lower-case method matches", rbac, bob, "get", "/things", 0, "allowed"},
		{"path: percent-encoded bypass", rbac, bob, "GET", "/%61dmin/users", 403, "denied_rule"},
		{"path: dot-segment bypass", rbac, bob, "GET", "/public/../admin/users", 403, "denied_rule"},
		{"path: double-slash bypass", rbac, bob, "GET", "//admin//users", 403, "denied_rule"},
		{"path: encoded slash bypass", rbac, bob, "GET", "/admin%2Fusers", 403, "denied_rule"},
		{"path: segment parameter bypass", rbac, bob, "GET", "/admin;jsessionid=x/users", 403, "denied_rule"},
		{"path: encoded segment parameter bypass", rbac, bob, "GET", "/admin%3Bx/users", 403, "denied_rule"},
		{"path: bad escape is 400", rbac, bob, "GET", "/admin/%zz", 400, "denied_bad_path"},
		{"path: CRLF in path still matched", rbac, bob, "GET", "/admin/%0d%0a", 403, "denied_rule"},
		{"exact path", `{"rules":[{"consumers":["bob"],"paths":["/only"]}]}`, bob, "GET", "/only/", 403, "denied_default"},
		{"prefix without slash", `{"rules":[{"consumers":["bob"],"paths":["/api*"]}]}`, bob, "GET", "/api-v2/x", 0, "allowed"},
		{"unicode consumer name", `{"rules":[{"consumers":["zoë"]}]}`, &api.Consumer{Name: "zoë"}, "GET", "/", 0, "allowed"},
		{"lookalike unicode name denied", `{"rules":[{"consumers":["zoë"]}]}`, &api.Consumer{Name: "zoe\u0308"}, "GET", "/", 403, "denied_default"},
		{"custom statuses", `{"rules":[{"groups":["x"]}],"status":404,"message":"nope"}`, bob, "GET", "/", 404, "denied_default"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, tc.config)
			ctx := fakeframework.NewContext(Name, fakeframework.NewRequest(tc.method, tc.path))
			ctx.SetConsumer(tc.consumer)
			st := filterOf(c).OnReceive(ctx, ctx.Req, nil, nil)
			switch {
			case tc.status == 0 && (st != api.Continue || ctx.Replied != nil):
				t.Fatalf("want pass, got %v reply %+v", st, ctx.Replied)
			case tc.status != 0 && (st != api.Stop || ctx.Replied == nil || ctx.Replied.Code != tc.status):
				t.Fatalf("want %d and Stop, got %v reply %+v", tc.status, st, ctx.Replied)
			}
			if tc.status != 0 && strings.Contains(ctx.Replied.Body, tc.path) && tc.path != "/" {
				t.Errorf("reply body echoes the request: %q", ctx.Replied.Body)
			}
			if got := env.Count(tc.counter); got != 1 {
				t.Errorf("%s = %d, want 1", tc.counter, got)
			}
		})
	}
}

func TestMatchPathOf(t *testing.T) {
	cases := map[string]string{
		"/":                   "/",
		"/a/b?c=d":            "/a/b",
		"/a/b#frag":           "/a/b",
		"/a//b/":              "/a/b/",
		"/a/./b":              "/a/b",
		"/a/b/..":             "/a",
		"/../../etc":          "/etc",
		"/%41%2f%2e%2e/x":     "/x",
		"":                    "/",
		"relative":            "/relative",
		"/already/clean/path": "/already/clean/path",
		"/admin;x/users":      "/admin/users",
		"/a;x=1;y/b;z":        "/a/b",
		"/a/..;/admin":        "/admin",
	}
	for in, want := range cases {
		got, err := matchPathOf(in)
		if err != nil || got != want {
			t.Errorf("matchPathOf(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := matchPathOf("/%g0"); err == nil {
		t.Error("bad escape accepted")
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	cases := []struct{ name, config, field, reason string }{
		{"no rules", `{}`, "rules", "at least one rule"},
		{"rule without subject", `{"rules":[{"methods":["GET"]}]}`, "rules[0]", "needs consumers or groups"},
		{"bad action", `{"rules":[{"consumers":["a"]},{"consumers":["a"],"action":"block"}]}`, "rules[1].action", "must be"},
		{"bad method", `{"rules":[{"consumers":["a"],"methods":["GET /"]}]}`, "rules[0].methods[0]", "not an HTTP method"},
		{"relative path", `{"rules":[{"consumers":["a"],"paths":["admin"]}]}`, "rules[0].paths[0]", "must start with '/'"},
		{"star in the middle", `{"rules":[{"consumers":["a"],"paths":["/a/*/b"]}]}`, "rules[0].paths[0]", "only allowed at the end"},
		{"unnormalized path", `{"rules":[{"consumers":["a"],"paths":["/a/../b"]}]}`, "rules[0].paths[0]", "not normalized"},
		{"encoded path", `{"rules":[{"consumers":["a"],"paths":["/%61"]}]}`, "rules[0].paths[0]", "decoded path"},
		{"control char in consumer", `{"rules":[{"consumers":["a\r\nb"]}]}`, "rules[0].consumers[0]", "control characters"},
		{"empty group", `{"rules":[{"groups":[""]}]}`, "rules[0].groups[0]", "empty"},
		{"bad default", `{"rules":[{"consumers":["a"]}],"default_action":"maybe"}`, "default_action", "must be"},
		{"bad status", `{"rules":[{"consumers":["a"]}],"status":302}`, "status", "4xx or 5xx"},
		{"unknown field", `{"rules":[{"consumers":["a"],"users":["b"]}]}`, "rules[0].users", "unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}
