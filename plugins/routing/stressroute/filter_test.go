package stressroute

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

const exampleConfig = `{
  "match": {"headers": [{"name": "x-pressure-test", "exact": "true"}]},
  "shadow": {"suffix": "-shadow", "clusters": {"payments": "payments-stress"}}
}`

func TestMarkedTrafficGoesToTheShadowOfItsTarget(t *testing.T) {
	c, env := parse(t, exampleConfig)
	for _, tc := range []struct {
		name         string
		headers      []string
		routeCluster string // what the route matched on the request as it came
		status       int    // 0: continues
		cluster      string // x-moe-cluster after the plugin
	}{
		{"route cluster, suffix rule", []string{"x-pressure-test", "true"}, "orders", 0, "orders-shadow"},
		{"cluster header from traffic-route, map", []string{"x-pressure-test", "true", "x-moe-cluster", "payments"}, "orders", 0, "payments-stress"},
		{"the map wins over the rule", []string{"x-pressure-test", "true"}, "payments", 0, "payments-stress"},
		{"already a shadow stays", []string{"x-pressure-test", "true", "x-moe-cluster", "orders-shadow"}, "", 0, "orders-shadow"},
		{"a map shadow stays", []string{"x-pressure-test", "true", "x-moe-cluster", "payments-stress"}, "", 0, "payments-stress"},
		{"repeated cluster headers: the first, one value after", []string{"x-pressure-test", "true", "x-moe-cluster", "a", "x-moe-cluster", "b"}, "", 0, "a-shadow"},
		{"repeated mark: one value matches", []string{"x-pressure-test", "no", "x-pressure-test", "true"}, "orders", 0, "orders-shadow"},
		{"no target (direct response route)", []string{"x-pressure-test", "true"}, "", 503, ""},
		{"empty cluster header: the route's cluster", []string{"x-pressure-test", "true", "x-moe-cluster", ""}, "orders", 0, "orders-shadow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := fakeframework.NewRequest("GET", "/", tc.headers...)
			ctx := fakeframework.NewContext(Name, req)
			ctx.Cluster = tc.routeCluster
			st := (*filter)(c).OnReceive(ctx, req, nil, nil)
			if v := req.Values("x-pressure-test"); len(v) != 1 || v[0] != "true" {
				t.Errorf("mark header %q, want one value true", v)
			}
			if v, _ := ctx.Var("$stress"); v != "true" {
				t.Errorf("$stress = %q", v)
			}
			if tc.status != 0 {
				if st != api.Stop || ctx.Replied == nil || ctx.Replied.Code != tc.status {
					t.Fatalf("status %v reply %+v, want %d", st, ctx.Replied, tc.status)
				}
				return
			}
			if st != api.Continue {
				t.Fatalf("status %v reply %+v", st, ctx.Replied)
			}
			if v := req.Values("x-moe-cluster"); len(v) != 1 || v[0] != tc.cluster {
				t.Errorf("x-moe-cluster %q, want %q", v, tc.cluster)
			}
			if v, _ := ctx.Var("$stress_cluster"); v != tc.cluster {
				t.Errorf("$stress_cluster = %q, want %q", v, tc.cluster)
			}
		})
	}
	if env.Count("marked") != 9 || env.Count("refused_no_target") != 1 || env.Count("shadow_payments_stress") != 3 {
		t.Errorf("counters %v", env.Values())
	}
}

func TestMapOnlyRefusesTargetsWithoutShadow(t *testing.T) {
	c, env := parse(t, `{"match": {"vars": [{"name": "$header_x-stress"}]}, "shadow": {"clusters": {"orders": "orders-pt"}}, "missing_status": 421}`)
	req := fakeframework.NewRequest("GET", "/", "x-stress", "1")
	ctx := fakeframework.NewContext(Name, req)
	ctx.Cluster = "payments"
	if st := (*filter)(c).OnReceive(ctx, req, nil, nil); st != api.Stop || ctx.Replied.Code != 421 || !strings.Contains(ctx.Replied.Body, "no shadow") {
		t.Fatalf("status %v reply %+v", st, ctx.Replied)
	}
	if _, ok := req.Get("x-moe-cluster"); ok {
		t.Fatal("cluster header set on a refused request")
	}
	if env.Count("refused_no_shadow") != 1 {
		t.Fatalf("counters %v", env.Values())
	}
	// orders-shadow is not a shadow here (no rule): an unmarked request may use it.
	if c.isShadow("orders-shadow") || !c.isShadow("orders-pt") {
		t.Fatal("isShadow")
	}
}

func TestUnmarkedTrafficNeverReachesAShadow(t *testing.T) {
	c, env := parse(t, exampleConfig)
	for _, tc := range []struct {
		name         string
		headers      []string
		routeCluster string
		status       int
		cluster      []string // x-moe-cluster after the plugin
	}{
		{"plain", nil, "orders", 0, nil},
		{"client's mark with another value is removed", []string{"x-pressure-test", "1", "x-pressure-test", "yes"}, "orders", 0, nil},
		{"client's shadow cluster header removed", []string{"x-moe-cluster", "orders-shadow"}, "orders-shadow", 0, nil},
		{"a shadow among repeated values: all removed", []string{"x-moe-cluster", "orders", "x-moe-cluster", "payments-stress"}, "orders", 0, nil},
		{"production cluster header kept", []string{"x-moe-cluster", "payments"}, "payments", 0, []string{"payments"}},
		{"a route to a shadow cluster is refused", nil, "orders-shadow", 403, nil},
		{"a route to a map shadow is refused", nil, "payments-stress", 403, nil},
		{"the suffix alone is no shadow", nil, "-shadow", 0, nil},
		{"no route cluster", nil, "", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := fakeframework.NewRequest("GET", "/", tc.headers...)
			ctx := fakeframework.NewContext(Name, req)
			ctx.Cluster = tc.routeCluster
			st := (*filter)(c).OnReceive(ctx, req, nil, nil)
			if _, ok := req.Get("x-pressure-test"); ok {
				t.Errorf("mark header kept on unmarked traffic")
			}
			if _, ok := ctx.Var("$stress"); ok {
				t.Errorf("$stress set")
			}
			if tc.status != 0 {
				if st != api.Stop || ctx.Replied == nil || ctx.Replied.Code != tc.status {
					t.Fatalf("status %v reply %+v, want %d", st, ctx.Replied, tc.status)
				}
				return
			}
			if st != api.Continue {
				t.Fatalf("status %v reply %+v", st, ctx.Replied)
			}
			if got := req.Values("x-moe-cluster"); strings.Join(got, ",") != strings.Join(tc.cluster, ",") {
				t.Errorf("x-moe-cluster %q, want %q", got, tc.cluster)
			}
		})
	}
	want := map[string]int64{"unmarked": 9, "marked": 0, "mark_header_removed": 1, "shadow_header_removed": 2, "unmarked_refused": 2}
	for k, v := range want {
		if got := env.Value(k); got != v {
			t.Errorf("%s = %d, want %d", k, got, v)
		}
	}
}

func TestMissingShadowGetsTheConfiguredStatus(t *testing.T) {
	c, env := parse(t, `{"match": {"headers": [{"name": "x-pressure-test", "exact": "true"}]}, "missing_status": 502}`)
	run := func(status int, details string, marked bool) int {
		req := fakeframework.NewRequest("GET", "/")
		resp := fakeframework.NewResponse(status)
		ctx := fakeframework.NewContext(Name, req).WithResponse(resp)
		ctx.Properties = map[string]string{"response.code_details": details}
		if marked {
			ctx.SetState(StateKey, "true")
		}
		if st := (*filter)(c).Append(ctx, resp, nil, nil); st != api.Continue {
			t.Fatalf("status %v", st)
		}
		return resp.Status()
	}
	for _, tc := range []struct {
		status  int
		details string
		marked  bool
		want    int
	}{
		{503, "cluster_not_found", true, 502},
		{404, "cluster_not_found", true, 502}, // cluster_not_found_response_code NOT_FOUND
		{503, "cluster_not_found", false, 503},
		{503, "upstream_reset_before_response_started{remote_connection_failure}", true, 503}, // shadow down: Envoy's answer
		{200, "via_upstream", true, 200},
	} {
		if got := run(tc.status, tc.details, tc.marked); got != tc.want {
			t.Errorf("%d %s marked=%v: %d, want %d", tc.status, tc.details, tc.marked, got, tc.want)
		}
	}
	if env.Count("shadow_missing") != 2 {
		t.Errorf("shadow_missing = %d", env.Count("shadow_missing"))
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	m := `"match": {"headers": [{"name": "x-pt"}]}`
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "match", "is required"},
		{`{"match": {}}`, "match", "would mark every request"},
		{`{"match": {"cel": "1"}}`, "match.cel", "bool"},
		{`{` + m + `, "mark_header": "x y"}`, "mark_header", "not a valid header name"},
		{`{` + m + `, "mark_value": "a b"}`, "mark_value", "visible ASCII"},
		{`{` + m + `, "mark_header": "X-Moe-Cluster"}`, "mark_header", "must differ from cluster_header"},
		{`{` + m + `, "cluster_header": ""}`, "cluster_header", "not a valid header name"},
		{`{` + m + `, "missing_status": 200}`, "missing_status", "4xx or 5xx"},
		{`{` + m + `, "unmarked_status": 99}`, "unmarked_status", "4xx or 5xx"},
		{`{` + m + `, "shadow": {"suffix": "a b"}}`, "shadow.suffix", "visible ASCII"},
		{`{` + m + `, "shadow": {"clusters": {"a": "a"}}}`, "shadow.clusters.a", "its own shadow"},
		{`{` + m + `, "shadow": {"clusters": {"a": "b", "b": "c"}}}`, "shadow.clusters.a", "either production or shadow"},
		{`{` + m + `, "shadow": {"clusters": {"a": ""}}}`, "shadow.clusters.a", "is required"},
		{`{` + m + `, "shadow": {"sufix": "-s"}}`, "shadow.sufix", "unknown field"},
	} {
		t.Run(tc.field+" "+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}

func TestDefaultNamingRule(t *testing.T) {
	c, _ := parse(t, `{"match": {"headers": [{"name": "x-pt"}]}}`)
	if c.Shadow.Suffix != "-shadow" || c.shadowFor("orders") != "orders-shadow" || !c.isShadow("orders-shadow") {
		t.Fatalf("default rule: %+v", c.Shadow)
	}
	c, _ = parse(t, `{"match": {"headers": [{"name": "x-pt"}]}, "shadow": {"prefix": "pt-"}}`)
	if c.shadowFor("orders") != "pt-orders" || c.isShadow("pt-") || !c.isShadow("pt-x") {
		t.Fatalf("prefix rule: %+v", c.Shadow)
	}
}
