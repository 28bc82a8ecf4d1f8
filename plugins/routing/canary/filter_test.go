package canary

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

const full = `{
  "keys": ["$header_x-user-id", "$cookie_uid"],
  "cluster_header": "x-moe-cluster",
  "response_header": "x-canary-target",
  "override": {"header": "x-canary", "cookie": "canary"},
  "cookie": {"name": "moe_canary", "max_age": "1h", "http_only": true, "same_site": "Lax"},
  "targets": [
    {"name": "stable", "cluster": "svc-v1", "weight": 90},
    {"name": "canary", "cluster": "svc-v2", "weight": 10},
    {"name": "dark", "cluster": "svc-v3", "weight": 0}
  ]
}`

// A user id that the 90/10 split sends to the canary, and one to stable.
func usersOf(t *testing.T, c *Config) (canaryUser, stableUser string) {
	t.Helper()
	for i := 0; canaryUser == "" || stableUser == ""; i++ {
		u := "u" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		if c.pick(c.keyHash(u)).Name == "canary" {
			canaryUser = u
		} else {
			stableUser = u
		}
	}
	return
}

func TestDecisionOrder(t *testing.T) {
	c, env := parse(t, full)
	cu, su := usersOf(t, c)
	for _, tc := range []struct {
		name    string
		headers []string
		want    string
		why     string
	}{
		{"key: user on canary", []string{"x-user-id", cu}, "canary", "key"},
		{"key: user on stable", []string{"x-user-id", su}, "stable", "key"},
		{"second key (cookie) when the header is absent", []string{"cookie", "a=1; uid=" + cu}, "canary", "key"},
		{"override header beats the key, even to a 0-weight target", []string{"x-user-id", su, "x-canary", "dark"}, "dark", "override"},
		{"override cookie", []string{"x-user-id", su, "cookie", "canary=canary"}, "canary", "override"},
		{"override header beats override cookie", []string{"x-canary", "stable", "cookie", "canary=canary"}, "stable", "override"},
		{"unknown override value is ignored", []string{"x-user-id", su, "x-canary", "nope"}, "stable", "key"},
		{"sticky cookie beats the key", []string{"x-user-id", su, "cookie", "moe_canary=canary"}, "canary", "cookie"},
		{"sticky cookie of a drained target is decided again", []string{"x-user-id", su, "cookie", "moe_canary=dark"}, "stable", "key"},
		{"sticky cookie of an unknown target is decided again", []string{"x-user-id", cu, "cookie", "moe_canary=v9"}, "canary", "key"},
		{"malformed cookie header: no value found, key used", []string{"x-user-id", cu, "cookie", ";;=;moe_canary;canary"}, "canary", "key"},
		{"repeated key header: the first value counts", []string{"x-user-id", cu, "x-user-id", su}, "canary", "key"},
		{"key too long: ignored, next key (none): random", []string{"x-user-id", strings.Repeat("9", 300)}, "", "random"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := env.Count("by_" + tc.why)
			ctx, req := run(t, c, tc.headers...)
			got := targetOf(t, ctx)
			if tc.want != "" && got != tc.want {
				t.Fatalf("target %q, want %q", got, tc.want)
			}
			if env.Count("by_"+tc.why) != before+1 {
				t.Fatalf("by_%s not counted: %v", tc.why, env.Values())
			}
			if cl, _ := req.Get("x-moe-cluster"); cl != c.byName[got].Cluster || ctx.RouteCleared != 1 {
				t.Fatalf("x-moe-cluster %q, route cleared %d", cl, ctx.RouteCleared)
			}
		})
	}
	if env.Count("override_unknown") != 1 || env.Count("invalid_key") != 1 {
		t.Errorf("counters %v", env.Values())
	}
}

// A client cannot pick a cluster by sending the cluster header itself.
func TestClientClusterHeaderIsReplaced(t *testing.T) {
	c, _ := parse(t, full)
	cu, _ := usersOf(t, c)
	ctx, req := run(t, c, "x-user-id", cu, "x-moe-cluster", "admin-backend", "x-moe-cluster", "other")
	if v := req.Values("x-moe-cluster"); len(v) != 1 || v[0] != "svc-v2" || ctx.RouteCleared != 1 {
		t.Fatalf("x-moe-cluster %v, cleared %d", v, ctx.RouteCleared)
	}
	// Already right: no route-cache clear needed.
	ctx, _ = run(t, c, "x-user-id", cu, "x-moe-cluster", "svc-v2")
	if ctx.RouteCleared != 0 {
		t.Fatalf("cleared %d for an unchanged header", ctx.RouteCleared)
	}
}

func TestNoKey(t *testing.T) {
	c, env := parse(t, `{"keys":["$header_x-user-id"],"no_key_target":"stable","targets":[{"name":"stable","cluster":"a","weight":1},{"name":"canary","cluster":"b","weight":1}]}`)
	for i := 0; i < 20; i++ {
		if ctx, _ := run(t, c); targetOf(t, ctx) != "stable" {
			t.Fatal("no key must go to no_key_target")
		}
	}
	if env.Count("by_no_key_target") != 20 {
		t.Fatalf("%v", env.Values())
	}
	// Without no_key_target: weighted random per request.
	c, _ = parse(t, `{"targets":[{"name":"stable","cluster":"a","weight":3},{"name":"canary","cluster":"b","weight":1}]}`)
	n := map[string]int{}
	for i := 0; i < 4000; i++ {
		ctx, _ := run(t, c)
		n[targetOf(t, ctx)]++
	}
	if n["canary"] < 850 || n["canary"] > 1150 {
		t.Fatalf("random 3:1 split gave %v", n)
	}
}

func TestOverrideMatchRestrictsTesters(t *testing.T) {
	c, env := parse(t, `{"keys":["$header_x-user-id"],"override":{"header":"x-canary","match":{"headers":[{"name":"x-tester","exact":"yes"}]}},
	  "targets":[{"name":"stable","cluster":"a","weight":1},{"name":"canary","cluster":"b","weight":0}]}`)
	if ctx, _ := run(t, c, "x-canary", "canary"); targetOf(t, ctx) != "stable" || env.Count("override_refused") != 1 {
		t.Fatalf("override without x-tester: %s %v", targetOf(t, ctx), env.Values())
	}
	if ctx, _ := run(t, c, "x-canary", "canary", "x-tester", "yes"); targetOf(t, ctx) != "canary" {
		t.Fatalf("override with x-tester: %s", targetOf(t, ctx))
	}
}

func TestHostsAndTargetHeader(t *testing.T) {
	c, _ := parse(t, `{"keys":["$header_x-user-id"],"cluster_header":"","target_header":"x-version",
	  "targets":[{"name":"v1","weight":1,"hosts":["127.0.0.1:9001"]},{"name":"v2","weight":0,"hosts":["127.0.0.1:9002"],"strict":true}]}`)
	ctx, req := run(t, c, "x-user-id", "u1", "x-version", "v2")
	if v, _ := req.Get("x-version"); v != "v1" || ctx.OverrideHost != "127.0.0.1:9001" || ctx.RouteCleared != 1 {
		t.Fatalf("x-version %q host %q cleared %d", v, ctx.OverrideHost, ctx.RouteCleared)
	}
}

func TestResponsePath(t *testing.T) {
	c, env := parse(t, full)
	cu, _ := usersOf(t, c)
	for _, tc := range []struct {
		name       string
		headers    []string
		target     string
		setCookie  string
		status     int
		properties map[string]string
	}{
		{"chosen by key: pin it", []string{"x-user-id", cu}, "canary", "moe_canary=canary; Max-Age=3600; Path=/; HttpOnly; SameSite=Lax", 200, nil},
		{"chosen by cookie: already pinned", []string{"cookie", "moe_canary=canary"}, "canary", "", 200, nil},
		{"override: not pinned", []string{"x-canary", "dark"}, "dark", "", 200, nil},
		{"cluster missing: counted", []string{"x-canary", "dark"}, "dark", "", 503, map[string]string{"response.code_details": "cluster_not_found"}},
		{"other 503: not counted", []string{"x-canary", "dark"}, "dark", "", 503, map[string]string{"response.code_details": "upstream_reset_before_response_started{connection_failure}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := fakeframework.NewRequest("GET", "/", tc.headers...)
			resp := fakeframework.NewResponse(tc.status)
			ctx := fakeframework.NewContext(Name, req).WithResponse(resp)
			ctx.Properties = tc.properties
			f := (*filter)(c)
			if f.OnReceive(ctx, req, nil, nil) != api.Continue || f.Append(ctx, resp, nil, nil) != api.Continue {
				t.Fatal("status")
			}
			if v, _ := resp.Get("x-canary-target"); v != tc.target {
				t.Fatalf("x-canary-target %q", v)
			}
			if v, _ := resp.Get("set-cookie"); v != tc.setCookie {
				t.Fatalf("set-cookie %q, want %q", v, tc.setCookie)
			}
		})
	}
	if env.Count("cluster_not_found") != 1 {
		t.Fatalf("cluster_not_found %d", env.Count("cluster_not_found"))
	}
	// A local reply before the plugin chose: nothing to add.
	resp := fakeframework.NewResponse(401)
	if _, st := fakeframework.RunSend(Name, (*filter)(c), fakeframework.NewRequest("GET", "/"), resp, nil); st != api.Continue || resp.Len() != 1 {
		t.Fatalf("%v %v", st, resp.Headers)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	two := `"targets":[{"name":"a","cluster":"ca","weight":1},{"name":"b","cluster":"cb","weight":1}]`
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "targets", "at least one target"},
		{`{"targets":[{"name":"a","cluster":"x","weight":0}]}`, "targets", "add up to 0"},
		{`{"targets":[{"name":"a b","cluster":"x","weight":1}]}`, "targets[0].name", "letters, digits"},
		{`{"targets":[{"name":"a","cluster":"x","weight":1},{"name":"a","cluster":"y","weight":1}]}`, "targets[1].name", "duplicate"},
		{`{"targets":[{"name":"a-b","cluster":"x","weight":1},{"name":"a_b","cluster":"y","weight":1}]}`, "targets[1].name", "same metric name"},
		{`{"targets":[{"name":"a","cluster":"x","weight":-1}]}`, "targets[0].weight", "between 0 and 1000000"},
		{`{"targets":[{"name":"a","cluster":"x y","weight":1}]}`, "targets[0].cluster", "spaces"},
		{`{"cluster_header":"","targets":[{"name":"a","cluster":"x","weight":1}]}`, "targets[0].cluster", "needs cluster_header"},
		{`{"targets":[{"name":"a","weight":1}]}`, "targets[0]", "steers nowhere"},
		{`{"targets":[{"name":"a","weight":1,"hosts":["svc.local:80"]}]}`, "targets[0].hosts[0]", "IP:port"},
		{`{"keys":["$nope"],` + two + `}`, "keys[0]", "unknown variable $nope"},
		{`{"no_key_target":"c",` + two + `}`, "no_key_target", `no target named "c"`},
		{`{"override":{},` + two + `}`, "override", "needs header or cookie"},
		{`{"override":{"cookie":"a;b"},` + two + `}`, "override.cookie", "cookie name"},
		{`{"override":{"header":"x","match":{"path":{"regex":"("}}},` + two + `}`, "override.match.path", "regex"},
		{`{"cookie":{"name":""},` + two + `}`, "cookie.name", "cookie name"},
		{`{"cookie":{"name":"c","max_age":"1.5s"},` + two + `}`, "cookie.max_age", "whole seconds"},
		{`{"cookie":{"name":"c","same_site":"lax"},` + two + `}`, "cookie.same_site", "one of"},
		{`{"cookie":{"name":"c","same_site":"None"},` + two + `}`, "cookie.same_site", "secure"},
		{`{"cookie":{"name":"c","path":"/a;b"},` + two + `}`, "cookie.path", "must not contain"},
		{`{"max_key_length":0,` + two + `}`, "max_key_length", "between 1 and 65536"},
		{`{"cluster_header":"x y",` + two + `}`, "cluster_header", "not a valid header name"},
		{`{"wieght":1,` + two + `}`, "wieght", "unknown field"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}
