package template

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestRequestsWithoutTheRequiredHeaderAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		headers      []string
		want         api.Status
		status       int
		body         string
	}{
		{"header present", `{"require_header": "X-Tenant"}`, []string{"x-tenant", "t1"}, api.Continue, 0, ""},
		{"header absent: default reply", `{"require_header": "X-Tenant"}`, nil, api.Stop, 400, "missing x-tenant\n"},
		{"configured reply", `{"require_header": "x-tenant", "status": 403, "body": "no tenant"}`, nil, api.Stop, 403, "no tenant"},
		{"empty value counts as present", `{"require_header": "x-tenant"}`, []string{"x-tenant", ""}, api.Continue, 0, ""},
		{"no requirement", `{}`, nil, api.Continue, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, tc.config)
			ctx, st := fakeframework.Run(Name, (*filter)(c), fakeframework.NewRequest("GET", "/", tc.headers...), nil)
			if st != tc.want {
				t.Fatalf("status %v, want %v", st, tc.want)
			}
			if tc.want == api.Continue {
				if ctx.Replied != nil || env.Count("passed") != 1 {
					t.Fatalf("replied %+v, passed %d", ctx.Replied, env.Count("passed"))
				}
				return
			}
			if ctx.Replied == nil || ctx.Replied.Code != tc.status || ctx.Replied.Body != tc.body || env.Count("denied") != 1 {
				t.Fatalf("reply %+v, denied %d; want %d %q", ctx.Replied, env.Count("denied"), tc.status, tc.body)
			}
		})
	}
}

func TestResponsesAreStampedFromTheTemplate(t *testing.T) {
	c, _ := parse(t, `{"stamp_header": "X-Route", "stamp": "$route_name/$header_x-tenant"}`)
	req := fakeframework.NewRequest("GET", "/", "x-tenant", "t1")
	resp := fakeframework.NewResponse(200)
	ctx := fakeframework.NewContext(Name, req).WithResponse(resp)
	ctx.RouteName = "orders"
	if st := (*filter)(c).Append(ctx, resp, nil, nil); st != api.Continue {
		t.Fatalf("status %v", st)
	}
	if v, _ := resp.Get("x-route"); v != "orders/t1" {
		t.Fatalf("x-route = %q", v)
	}
	// Without a stamp the response is left alone.
	c, _ = parse(t, `{}`)
	resp = fakeframework.NewResponse(200)
	if _, st := fakeframework.RunSend(Name, (*filter)(c), req, resp, nil); st != api.Continue || resp.Len() != 1 {
		t.Fatalf("status %v, headers %v", st, resp.Headers)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{"require_header": "x tenant"}`, "require_header", "not a valid header name"},
		{`{"status": 200}`, "status", "must be a 4xx or 5xx status, got 200"},
		{`{"stamp_header": ""}`, "stamp_header", "not a valid header name"},
		{`{"stamp": "$nope"}`, "stamp", "unknown variable $nope"},
		{`{"stmp": "x"}`, "stmp", "unknown field"},
		{`{"status": "400"}`, "status", "expected an integer, got a string"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}
