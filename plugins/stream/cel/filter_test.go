package cel

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestRequestRules(t *testing.T) {
	const cfg = `{"rules": [
		{"name": "old-clients", "when": "request.headers[?\"user-agent\"].orValue(\"\").startsWith(\"OldClient/\")",
		 "deny": {"status": 426, "body": "upgrade your client\n", "headers": {"X-Reason": "old-client"}}},
		{"name": "tier", "when": "consumer.name != \"\"",
		 "set_vars": [{"name": "tier", "expr": "consumer.attributes[?\"tier\"].orValue(\"free\")"}],
		 "set_headers": [{"name": "X-Tier", "value": "$cel_tier"}, {"name": "x-who", "expr": "consumer.name + \"@\" + source.ip"}]},
		{"name": "canary", "when": "request.cookies[?\"canary\"].orValue(\"\") == \"1\"", "mark": "canary",
		 "set_headers": [{"name": "x-canary", "value": "1"}]},
		{"when": "request.query_params[?\"debug\"].hasValue()", "remove_headers": ["x-internal"], "mark": "debug"},
		{"name": "admin-only", "when": "request.url_path.startsWith(\"/admin\") && consumer.group != \"admins\"", "deny": {}}
	]}`
	for _, tc := range []struct {
		name     string
		req      *fakeframework.Request
		consumer *api.Consumer
		status   int // 0: continues
		body     string
		headers  map[string]string // request headers after the plugin ("" = absent)
		marks    string
		tier     string
	}{
		{"old client denied", fakeframework.NewRequest("GET", "/", "user-agent", "OldClient/1.0"), nil, 426, "upgrade your client\n", nil, "", ""},
		{"anonymous passes untouched", fakeframework.NewRequest("GET", "/", "user-agent", "curl/8"), nil, 0, "", map[string]string{"x-tier": "", "x-who": ""}, "", ""},
		{"consumer: variable and headers", fakeframework.NewRequest("GET", "/"), &api.Consumer{Name: "alice", Attributes: map[string]string{"tier": "gold"}}, 0, "",
			map[string]string{"x-tier": "gold", "x-who": "alice@192.0.2.7"}, "", "gold"},
		{"consumer without tier: the default", fakeframework.NewRequest("GET", "/"), &api.Consumer{Name: "bob"}, 0, "", map[string]string{"x-tier": "free"}, "", "free"},
		{"two marks, header removed", fakeframework.NewRequest("GET", "/x?debug=1", "cookie", "canary=1", "x-internal", "secret"), nil, 0, "",
			map[string]string{"x-canary": "1", "x-internal": ""}, "canary,debug", ""},
		{"default deny", fakeframework.NewRequest("GET", "/admin/users"), &api.Consumer{Name: "bob", Group: "staff"}, 403, "Forbidden\n", nil, "", "free"},
		{"admins pass", fakeframework.NewRequest("GET", "/admin/users"), &api.Consumer{Name: "root", Group: "admins"}, 0, "", nil, "", "free"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, cfg)
			ctx := fakeframework.NewContext(Name, tc.req).From("192.0.2.7:5555")
			ctx.SetConsumer(tc.consumer)
			st := c.filter.(api.ReceiverFilter).OnReceive(ctx, tc.req, nil, nil)
			if tc.status == 0 {
				if st != api.Continue || ctx.Replied != nil {
					t.Fatalf("%v %+v", st, ctx.Replied)
				}
			} else if st != api.Stop || ctx.Replied == nil || ctx.Replied.Code != tc.status || ctx.Replied.Body != tc.body {
				t.Fatalf("%v %+v, want %d %q", st, ctx.Replied, tc.status, tc.body)
			}
			for k, want := range tc.headers {
				if got, _ := tc.req.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if got := state(ctx, stateMarks); got != tc.marks {
				t.Errorf("marks %q, want %q", got, tc.marks)
			}
			if v, _ := ctx.Var("$cel_tier"); v != tc.tier {
				t.Errorf("$cel_tier %q, want %q", v, tc.tier)
			}
			if tc.status == 426 && (ctx.Replied.Header("x-reason") != "old-client" || env.Count("old-clients_matched") != 1 || env.Count("denied") != 1) {
				t.Errorf("reply headers %v, metrics %v", ctx.Replied.Headers, env.Values())
			}
		})
	}
}

func TestMarksAreDecisionsAndVariables(t *testing.T) {
	c, _ := parse(t, `{"rules": [{"mark": "pressure-test", "when": "request.headers[?\"x-pt\"].orValue(\"\") == \"1\""}, {"mark": "pressure-test"}, {"mark": "gray"}]}`)
	req := fakeframework.NewRequest("GET", "/", "x-pt", "1")
	ctx, _ := fakeframework.Run(Name, c.filter.(api.ReceiverFilter), req, nil)
	if v, _ := ctx.Var("$cel_marks"); v != "pressure-test,gray" {
		t.Errorf("$cel_marks = %q", v)
	}
	if len(ctx.Recorded) != 3 || ctx.Recorded[0].Reason != "mark pressure-test" || !ctx.Recorded[0].Allowed || ctx.Recorded[2].Reason != "mark gray" {
		t.Errorf("decisions %+v", ctx.Recorded)
	}
}

func TestResponseRules(t *testing.T) {
	c, env := parse(t, `{"rules": [
		{"at": "response", "when": "response.code >= 500", "set_headers": [{"name": "cache-control", "value": "no-store"}], "remove_headers": ["server"]},
		{"at": "response", "when": "response.headers[?\"x-leak\"].hasValue()", "deny": {"status": 502, "body": "bad upstream answer\n"}},
		{"at": "response", "set_headers": [{"name": "x-route", "value": "$route_name"}]}
	]}`)
	f := c.filter.(api.SenderFilter)
	if _, ok := c.filter.(api.ReceiverFilter); ok {
		t.Error("no request rules, but the filter has OnReceive")
	}
	req := fakeframework.NewRequest("GET", "/")
	resp := fakeframework.NewResponse(503, "server", "upstream/1")
	ctx := fakeframework.NewContext(Name, req).WithResponse(resp)
	ctx.RouteName = "orders"
	if st := f.Append(ctx, resp, nil, nil); st != api.Continue {
		t.Fatal(st)
	}
	if v, _ := resp.Get("cache-control"); v != "no-store" {
		t.Errorf("cache-control %q", v)
	}
	if _, ok := resp.Get("server"); ok {
		t.Error("server kept")
	}
	if v, _ := resp.Get("x-route"); v != "orders" {
		t.Errorf("x-route %q", v)
	}
	resp = fakeframework.NewResponse(200, "x-leak", "1")
	ctx, st := fakeframework.RunSend(Name, f, req, resp, nil)
	if st != api.Stop || ctx.Replied == nil || ctx.Replied.Code != 502 || env.Count("denied") != 1 {
		t.Fatalf("%v %+v", st, ctx.Replied)
	}
}

func TestLogRules(t *testing.T) {
	c, env := parse(t, `{"rules": [
		{"at": "log", "when": "response.code == 429", "set_vars": [{"name": "limited", "value": "yes"}], "mark": "limited", "log": "\"limited \" + request.method + \" \" + request.url_path"}
	]}`)
	f, ok := c.filter.(api.AccessLogger)
	if !ok {
		t.Fatalf("filter %T has no Log", c.filter)
	}
	if _, ok := c.filter.(api.SenderFilter); ok {
		t.Error("no response rules, but the filter has Append")
	}
	req := fakeframework.NewRequest("GET", "/orders?x=1")
	ctx := fakeframework.NewContext(Name, req).WithResponse(fakeframework.NewResponse(429))
	f.Log(ctx, req, ctx.Resp, ctx.Receiver().RequestInfo())
	if state(ctx, "cel.limited") != "yes" || state(ctx, stateMarks) != "limited" || env.Count("matched") != 1 {
		t.Errorf("state %v %v metrics %v", state(ctx, "cel.limited"), state(ctx, stateMarks), env.Values())
	}
	ctx = fakeframework.NewContext(Name, req).WithResponse(fakeframework.NewResponse(200))
	f.Log(ctx, req, ctx.Resp, ctx.Receiver().RequestInfo())
	if env.Count("matched") != 1 {
		t.Errorf("a 200 matched")
	}
}

func TestEvaluationErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		req          *fakeframework.Request
		denied       bool
	}{
		// request.headers["x-tenant"] fails when the header is absent.
		{"skip (default): the rule does not apply", `{"rules": [{"when": "request.headers[\"x-tenant\"] != \"acme\"", "deny": {}}]}`, fakeframework.NewRequest("GET", "/"), false},
		{"match: fail closed", `{"rules": [{"when": "request.headers[\"x-tenant\"] != \"acme\"", "on_error": "match", "deny": {}}]}`, fakeframework.NewRequest("GET", "/"), true},
		{"the key present", `{"rules": [{"when": "request.headers[\"x-tenant\"] != \"acme\"", "on_error": "match", "deny": {}}]}`, fakeframework.NewRequest("GET", "/", "x-tenant", "acme"), false},
		// String work over a huge value exceeds the cost limit (shared/expr).
		{"cost limit", `{"rules": [{"when": "!request.headers[\"x\"].contains(\"b\")", "on_error": "match", "deny": {}}]}`,
			fakeframework.NewRequest("GET", "/", "x", strings.Repeat("a", 4<<20)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, tc.config)
			ctx, st := fakeframework.Run(Name, c.filter.(api.ReceiverFilter), tc.req, nil)
			if (st == api.Stop) != tc.denied || (ctx.Replied != nil) != tc.denied {
				t.Fatalf("status %v reply %+v, want denied %v", st, ctx.Replied, tc.denied)
			}
			if tc.name != "the key present" && env.Count("errors") != 1 {
				t.Errorf("errors = %d", env.Count("errors"))
			}
		})
	}
	// A value that fails, or carries CR/LF, skips the action.
	c, env := parse(t, `{"rules": [{"set_headers": [{"name": "x-a", "expr": "request.headers[\"nope\"]"}, {"name": "x-b", "expr": "\"a\\r\\nx-injected: 1\""}, {"name": "x-c", "value": "ok"}]}]}`)
	req := fakeframework.NewRequest("GET", "/")
	fakeframework.Run(Name, c.filter.(api.ReceiverFilter), req, nil)
	if _, a := req.Get("x-a"); a {
		t.Error("x-a set")
	}
	if _, b := req.Get("x-b"); b {
		t.Error("x-b set")
	}
	if v, _ := req.Get("x-c"); v != "ok" || env.Count("errors") != 2 {
		t.Errorf("x-c %q errors %d", v, env.Count("errors"))
	}
}

func TestPhase(t *testing.T) {
	c, _ := parse(t, `{"rules": [{"mark": "x"}]}`)
	if c.Needs().Phase != api.AfterRoute || c.Needs().MayBlock != 0 {
		t.Errorf("%+v", c.Needs())
	}
	c, _ = parse(t, `{"phase": "before_route", "rules": [{"mark": "x"}]}`)
	if c.Needs().Phase != api.BeforeRoute {
		t.Errorf("%+v", c.Needs())
	}
}

func TestConfigErrorsNameTheFieldAndPosition(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "rules", "at least one rule"},
		{`{"rules": [{"when": "request.method == \"GET\" && sourc.ip == \"1\"", "mark": "x"}]}`, "rules[0].when", "line 1, column 33: undeclared reference to 'sourc.ip' (did you mean 'source.ip'?)"},
		{"{\"rules\": [{\"mark\": \"x\"}, {\"when\": \"request.method ==\\n  1\", \"mark\": \"y\"}]}", "rules[1].when", "line 1, column 16: found no matching overload for '_==_'"},
		{`{"rules": [{"when": "request.method", "mark": "x"}]}`, "rules[0].when", "the expression is string, want bool"},
		{`{"rules": [{"when": "request.method ==", "mark": "x"}]}`, "rules[0].when", "line 1, column 18: Syntax error"},
		{`{"rules": [{"set_headers": [{"name": "x", "expr": "1 + 1"}]}]}`, "rules[0].set_headers[0].expr", "the expression is int, want string"},
		{`{"rules": [{"set_headers": [{"name": "x", "value": "$nope"}]}]}`, "rules[0].set_headers[0].value", "unknown variable $nope"},
		{`{"rules": [{"set_headers": [{"name": "x"}]}]}`, "rules[0].set_headers[0]", "set exactly one of value"},
		{`{"rules": [{"set_headers": [{"name": "x", "value": "a", "expr": "\"b\""}]}]}`, "rules[0].set_headers[0]", "set exactly one of value"},
		{`{"rules": [{"set_headers": [{"name": ":path", "value": "/"}]}]}`, "rules[0].set_headers[0].name", "not a valid header name"},
		{`{"rules": [{"remove_headers": ["a b"]}]}`, "rules[0].remove_headers[0]", "not a valid header name"},
		{`{"rules": [{"when": "true"}]}`, "rules[0]", "has no action"},
		{`{"rules": [{"at": "upstream", "mark": "x"}]}`, "rules[0].at", "must be one of"},
		{`{"rules": [{"at": "log", "deny": {}}]}`, "rules[0].deny", "cannot deny"},
		{`{"rules": [{"at": "log", "set_headers": [{"name": "x", "value": "1"}]}]}`, "rules[0].set_headers", "cannot change headers"},
		{`{"rules": [{"on_error": "deny", "mark": "x"}]}`, "rules[0].on_error", "must be one of"},
		{`{"rules": [{"deny": {"status": 200}}]}`, "rules[0].deny.status", "4xx or 5xx"},
		{`{"rules": [{"deny": {"headers": {"x y": "1"}}}]}`, "rules[0].deny.headers.x y", "not a valid header name"},
		{`{"rules": [{"set_vars": [{"name": "Tier", "value": "1"}]}]}`, "rules[0].set_vars[0].name", "starting with a letter"},
		{`{"rules": [{"set_vars": [{"name": "marks", "value": "1"}]}]}`, "rules[0].set_vars[0].name", "reserved"},
		{`{"rules": [{"mark": "a,b"}]}`, "rules[0].mark", "use 1 to 64"},
		{`{"rules": [{"name": "a", "mark": "x"}, {"name": "a", "mark": "y"}]}`, "rules[1].name", "also the name of rules[0]"},
		{`{"phase": "early", "rules": [{"mark": "x"}]}`, "phase", "must be one of"},
		{`{"rules": [{"when": 1, "mark": "x"}]}`, "rules[0].when", "expected a CEL expression as a string"},
	} {
		t.Run(tc.field+" "+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}
