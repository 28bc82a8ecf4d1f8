package trafficroute

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

const rulesConfig = `{
  "rules": [
    {"name": "canary", "match": {"headers": [{"name": "x-canary", "exact": "1"}]}, "cluster": "orders-canary"},
    {"name": "beta-users", "match": {"cookies": [{"name": "user", "prefix": "beta-"}]}, "cluster": "orders-canary"},
    {"name": "eu", "match": {"query": [{"name": "region", "exact": "eu"}]}, "set_headers": [{"name": "x-unit", "value": "eu-$arg_zone"}], "remove_headers": ["x-debug"]},
    {"match": {"path": {"regex": "^/v[0-9]+/legacy/"}, "methods": ["GET", "HEAD"]}, "cluster": "orders-legacy"},
    {"match": {"vars": [{"name": "$consumer", "prefix": "partner-"}]}, "cluster": "orders-partner"},
    {"match": {"cel": "request.method == \"POST\" && \"x-batch\" in request.headers"}, "cluster": "orders-bulk"}
  ],
  "default": {"cluster": "orders"}
}`

func TestRulesPickTheFirstMatchingTarget(t *testing.T) {
	c, env := parse(t, rulesConfig)
	for _, tc := range []struct {
		name, method, path string
		headers            []string
		consumer           string
		cluster            string // x-moe-cluster after the plugin ("" = absent)
		target             string // $traffic_target
		unit               string // x-unit after the plugin
	}{
		{"default", "GET", "/orders", nil, "", "orders", "orders", ""},
		{"header", "GET", "/orders", []string{"x-canary", "1"}, "", "orders-canary", "canary", ""},
		{"header other value", "GET", "/orders", []string{"x-canary", "0"}, "", "orders", "orders", ""},
		{"repeated header: one value matches", "GET", "/orders", []string{"x-canary", "0", "x-canary", "1"}, "", "orders-canary", "canary", ""},
		{"cookie", "GET", "/orders", []string{"cookie", "a=b; user=beta-7"}, "", "orders-canary", "beta-users", ""},
		{"first rule wins", "GET", "/orders", []string{"x-canary", "1", "cookie", "user=beta-7"}, "", "orders-canary", "canary", ""},
		{"malformed cookie: no match, default", "GET", "/orders", []string{"cookie", "user"}, "", "orders", "orders", ""},
		{"cookie with garbage around", "GET", "/orders", []string{"cookie", ";;=x; user=beta-1;;"}, "", "orders-canary", "beta-users", ""},
		{"query sets a header, no cluster", "GET", "/orders?zone=2&region=eu", []string{"x-debug", "1"}, "", "", "eu", "eu-2"},
		{"percent-encoded query", "GET", "/orders?region=%65u", nil, "", "", "eu", "eu-"},
		{"path regex and method", "HEAD", "/v2/legacy/x", nil, "", "orders-legacy", "orders-legacy", ""},
		{"path regex, other method", "POST", "/v2/legacy/x", nil, "", "orders", "orders", ""},
		{"path regex ignores the query", "GET", "/orders?p=/v2/legacy/", nil, "", "orders", "orders", ""},
		{"variable", "GET", "/orders", nil, "partner-acme", "orders-partner", "orders-partner", ""},
		{"cel", "POST", "/orders", []string{"x-batch", "1"}, "", "orders-bulk", "orders-bulk", ""},
		{"cel false", "GET", "/orders", []string{"x-batch", "1"}, "", "orders", "orders", ""},
		{"client header removed", "GET", "/orders", []string{"x-moe-cluster", "orders-bulk", "X-Moe-Cluster", "secret"}, "", "orders", "orders", ""},
		{"client header removed, header target", "GET", "/orders?region=eu", []string{"x-moe-cluster", "orders-bulk"}, "", "", "eu", "eu-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := fakeframework.NewRequest(tc.method, tc.path, tc.headers...)
			ctx := fakeframework.NewContext(Name, req)
			if tc.consumer != "" {
				ctx.SetConsumer(&api.Consumer{Name: tc.consumer})
			}
			if st := (*filter)(c).OnReceive(ctx, req, nil, nil); st != api.Continue || ctx.Replied != nil {
				t.Fatalf("status %v reply %+v", st, ctx.Replied)
			}
			if got := req.Values("x-moe-cluster"); (tc.cluster == "" && len(got) != 0) || (tc.cluster != "" && (len(got) != 1 || got[0] != tc.cluster)) {
				t.Errorf("x-moe-cluster = %q, want %q", got, tc.cluster)
			}
			if v, _ := ctx.Var("$traffic_target"); v != tc.target {
				t.Errorf("$traffic_target = %q, want %q", v, tc.target)
			}
			if v, _ := req.Get("x-unit"); v != tc.unit {
				t.Errorf("x-unit = %q, want %q", v, tc.unit)
			}
			if tc.unit != "" {
				if _, ok := req.Get("x-debug"); ok {
					t.Errorf("x-debug not removed")
				}
			}
		})
	}
	want := map[string]int64{"target_orders": 7, "target_canary": 3, "target_beta_users": 2, "target_eu": 3,
		"target_orders_legacy": 1, "target_orders_partner": 1, "target_orders_bulk": 1, "client_header_removed": 2}
	for k, v := range want {
		if got := env.Value(k); got != v {
			t.Errorf("%s = %d, want %d", k, got, v)
		}
	}
}

func TestWithoutDefaultUnmatchedRequestsAreLeftToTheRouteTable(t *testing.T) {
	c, env := parse(t, `{"rules": [{"match": {"headers": [{"name": "x-canary"}]}, "cluster": "canary"}]}`)
	req := fakeframework.NewRequest("GET", "/", "x-moe-cluster", "evil")
	ctx, st := fakeframework.Run(Name, (*filter)(c), req, nil)
	if _, ok := req.Get("x-moe-cluster"); st != api.Continue || ok {
		t.Fatalf("status %v headers %v", st, req.Headers)
	}
	if _, ok := ctx.Var("$traffic_target"); ok || env.Count("no_target") != 1 || env.Count("client_header_removed") != 1 {
		t.Fatalf("target set, or counters %v", env.Values())
	}
}

func TestHugeHeaderValuesAreMatchedNotCopied(t *testing.T) {
	c, _ := parse(t, rulesConfig)
	huge := strings.Repeat("b", 64<<10)
	req := fakeframework.NewRequest("GET", "/", "cookie", "user=beta-"+huge, "x-canary", huge)
	fakeframework.Run(Name, (*filter)(c), req, nil)
	if v, _ := req.Get("x-moe-cluster"); v != "orders-canary" {
		t.Fatalf("x-moe-cluster = %q", v)
	}
}

func TestMissingClusterIsCountedOnTheResponse(t *testing.T) {
	c, env := parse(t, rulesConfig)
	f := (*filter)(c)
	run := func(status int, details string, target string) {
		req := fakeframework.NewRequest("GET", "/")
		resp := fakeframework.NewResponse(status)
		ctx := fakeframework.NewContext(Name, req).WithResponse(resp)
		ctx.Properties = map[string]string{"response.code_details": details}
		if target != "" {
			ctx.SetState(StateKey, target)
		}
		if st := f.Append(ctx, resp, nil, nil); st != api.Continue || resp.Status() != status {
			t.Fatalf("status %v, response %d", st, resp.Status())
		}
	}
	run(503, "cluster_not_found", "orders-legacy") // counted
	run(404, "cluster_not_found", "orders")        // cluster_not_found_response_code NOT_FOUND: counted
	run(503, "via_upstream", "orders")             // the upstream's own 503
	run(503, "cluster_not_found", "eu")            // a header target: the route table's cluster, not ours
	run(503, "cluster_not_found", "")              // no target chosen
	run(200, "via_upstream", "orders")
	if got := env.Count("target_missing"); got != 2 {
		t.Fatalf("target_missing = %d, want 2", got)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "rules", "give rules, a default, or both"},
		{`{"default": {}}`, "default", "give cluster, set_headers or remove_headers"},
		{`{"rules": [{"cluster": "a"}]}`, "rules[0].match", "is required"},
		{`{"rules": [{"match": {}, "cluster": "a"}]}`, "rules[0].match", "must have a condition"},
		{`{"rules": [{"match": {"headers": [{"name": "x", "regex": "("}]}, "cluster": "a"}]}`, "rules[0].match.headers[0]", "regex: error parsing regexp"},
		{`{"rules": [{"match": {"cel": "request.nope == 1"}, "cluster": "a"}]}`, "rules[0].match.cel", "line 1, column 8: undeclared reference to 'request.nope'"},
		{`{"rules": [{"match": {"path": {"prefix": "/"}}, "cluster": "a b"}]}`, "rules[0].cluster", "visible ASCII"},
		{`{"default": {"cluster": "a\nb"}}`, "default.cluster", "visible ASCII"},
		{`{"default": {"set_headers": [{"name": "x a", "value": "1"}]}}`, "default.set_headers[0].name", "not a valid header name"},
		{`{"default": {"set_headers": [{"name": "x-a"}]}}`, "default.set_headers[0].value", "is required"},
		{`{"default": {"set_headers": [{"name": "x-a", "value": "$nope"}]}}`, "default.set_headers[0].value", "unknown variable $nope"},
		{`{"default": {"set_headers": [{"name": "X-Moe-Cluster", "value": "a"}]}}`, "default.set_headers[0].name", "is cluster_header"},
		{`{"default": {"remove_headers": ["host"]}}`, "default.remove_headers[0]", "rewrite plugin"},
		{`{"default": {"remove_headers": [":path"]}}`, "default.remove_headers[0]", "not a valid header name"},
		{`{"default": {"name": "a b", "cluster": "a"}}`, "default.name", "letters, digits"},
		{`{"rules": [{"match": {"methods": ["GET"]}, "name": "x", "cluster": "a"}], "default": {"name": "x", "cluster": "b"}}`, "default.name", `"x" already names a target with cluster "a"`},
		{`{"cluster_header": "x y", "default": {"cluster": "a"}}`, "cluster_header", "not a valid header name"},
		{`{"default": {"cluster": "a"}, "rulez": []}`, "rulez", "unknown field"},
	} {
		t.Run(tc.field+" "+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}

func TestTargetNames(t *testing.T) {
	c, _ := parse(t, `{"rules": [
	  {"match": {"methods": ["GET"]}, "set_headers": [{"name": "x-v", "value": "2"}]},
	  {"match": {"methods": ["PUT"]}, "cluster": "outbound|80||orders.prod.svc.cluster.local"}],
	  "default": {"remove_headers": ["x-v"]}}`)
	got := []string{c.Rules[0].Name, c.Rules[1].Name, c.Default.Name}
	want := []string{"rule0", "outbound|80||orders.prod.svc.cluster.local", "default"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("names %q, want %q", got, want)
		}
	}
}
