package auditlog

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// audit runs one request's log hook and returns its record.
func audit(t *testing.T, extra string, ctx *fakeframework.Context) Record {
	t.Helper()
	cfg, path := fileConfig(t, extra)
	c, _ := fakeframework.MustParse[*Config](t, Name, newConfig, cfg)
	var resp api.ResponseHeaderMap // nil, not a nil *Response, without a response
	if ctx.Resp != nil {
		resp = ctx.Resp
	}
	(*filter)(c).Log(ctx, ctx.Req, resp, ctx.Receiver().RequestInfo())
	c.Destroy()
	lines := readLines(t, path)
	if len(lines) != 1 {
		t.Fatalf("lines %q", lines)
	}
	return decode(t, lines[0])
}

func request(path string, kv ...string) *fakeframework.Context {
	ctx := fakeframework.NewContext(Name, fakeframework.NewRequest("POST", path, kv...)).From("192.0.2.7:4444")
	ctx.RouteName, ctx.Cluster = "orders", "orders-v1"
	ctx.Properties = map[string]string{"response.code_details": "via_upstream"}
	return ctx
}

func TestRecordSaysWhoWhatAndWhoDecided(t *testing.T) {
	// Allowed: key-auth identified alice (the framework records that).
	ctx := request("/orders/7").WithResponse(fakeframework.NewResponse(200))
	ctx.SetConsumer(&api.Consumer{Name: "alice", Group: "admins"})
	ctx.Recorded = []api.Decision{{Plugin: "key-auth", Allowed: true, Reason: "consumer alice"}, {Plugin: "limit-req", Allowed: true, Reason: "under the limit"}}
	r := audit(t, "", ctx)
	if r.WhoRaw["consumer"] != "alice" || r.WhoRaw["consumer_group"] != "admins" || r.WhoRaw["source_ip"] != "192.0.2.7" {
		t.Errorf("who %v", r.WhoRaw)
	}
	if r.What["method"] != "POST" || r.What["path"] != "/orders/7" || r.What["route"] != "orders" || r.What["cluster"] != "orders-v1" {
		t.Errorf("what %v", r.What)
	}
	if r.Decision["allowed"] != true || r.Decision["by"] != "limit-req" || len(r.Decisions) != 2 || r.Decisions[0]["plugin"] != "key-auth" {
		t.Errorf("decision %v, decisions %v", r.Decision, r.Decisions)
	}
	if r.Status != 200 || r.Details != "via_upstream" || r.RequestID != "test-request" {
		t.Errorf("outcome %+v", r)
	}

	// Denied: the first refusal decides, with its status.
	ctx = request("/orders/7").WithResponse(fakeframework.NewResponse(429))
	ctx.Recorded = []api.Decision{{Plugin: "key-auth", Allowed: true, Reason: "consumer bob"}, {Plugin: "limit-req", Allowed: false, Reason: "rate limited", Status: 429}}
	r = audit(t, "", ctx)
	if r.Decision["allowed"] != false || r.Decision["by"] != "limit-req" || r.Decision["reason"] != "rate limited" || r.Decision["status"] != float64(429) || r.Status != 429 {
		t.Errorf("denied: decision %v status %d", r.Decision, r.Status)
	}

	// Nobody decided (no auth in the chain): allowed, no "by".
	r = audit(t, "", request("/").WithResponse(fakeframework.NewResponse(404)))
	if r.Decision["allowed"] != true || r.Decision["by"] != nil || len(r.Decisions) != 0 || r.Status != 404 {
		t.Errorf("undecided: %v %v", r.Decision, r.Decisions)
	}
}

func TestCredentialsAreMasked(t *testing.T) {
	ctx := request("/pay?api_key=s3cr3t&id=7&token=t0k&x%5Fsecret=1&apikey",
		"authorization", "Bearer abc", "x-api-key", "k-123", "x-tenant", "t1", "x-sig", "sig-value", "cookie", "sid=9").
		WithResponse(fakeframework.NewResponse(200))
	r := audit(t, `"include_headers": ["authorization", "x-api-key", "X-Tenant", "x-sig", "cookie", "x-absent"], "mask_headers": ["x-sig"], "mask_query": ["api_key", "token", "x_secret", "apikey"]`, ctx)
	want := map[string]string{"authorization": "***", "x-api-key": "***", "x-tenant": "t1", "x-sig": "***", "cookie": "***"}
	if len(r.Headers) != len(want) {
		t.Fatalf("headers %v", r.Headers)
	}
	for k, v := range want {
		if r.Headers[k] != v {
			t.Errorf("header %s = %q, want %q", k, r.Headers[k], v)
		}
	}
	if p := r.What["path"]; p != "/pay?api_key=***&id=7&token=***&x%5Fsecret=***&apikey" {
		t.Errorf("path %q", p)
	}
	// Defaults mask the usual credential parameters; a path without them is kept.
	if r := audit(t, "", request("/a?key=k1&q=x")); r.What["path"] != "/a?key=***&q=x" {
		t.Errorf("default mask: %q", r.What["path"])
	}
	if r := audit(t, `"mask_query": []`, request("/a?key=k1")); r.What["path"] != "/a?key=k1" {
		t.Errorf("no mask: %q", r.What["path"])
	}
}

func TestFieldsAndMatch(t *testing.T) {
	r := audit(t, `"fields": {"tenant": "$header_x-tenant", "zone": "z-$arg_zone"}`, request("/x?zone=eu", "x-tenant", "t9"))
	if r.Fields["tenant"] != "t9" || r.Fields["zone"] != "z-eu" {
		t.Errorf("fields %v", r.Fields)
	}
	cfg, path := fileConfig(t, `"match": {"methods": ["DELETE"]}`)
	c, _ := fakeframework.MustParse[*Config](t, Name, newConfig, cfg)
	ctx := request("/x")
	(*filter)(c).Log(ctx, ctx.Req, nil, ctx.Receiver().RequestInfo())
	c.Destroy()
	if lines := readLines(t, path); len(lines) != 0 {
		t.Fatalf("unmatched request audited: %q", lines)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{"sink": {"type": "kafka"}}`, "sink.type", "must be one of"},
		{`{"sink": {"type": "http"}}`, "sink.url", "http:// or https://"},
		{`{"sink": {"type": "http", "url": "ftp://x"}}`, "sink.url", "http:// or https://"},
		{`{"sink": {"type": "file", "url": "http://127.0.0.1:1/"}}`, "sink.url", "is for sink type http"},
		{`{"sink": {"type": "file", "path": "audit.log"}}`, "sink.path", "absolute file path"},
		{`{"sink": {"type": "file", "path": "/dev/null/audit.log"}}`, "sink.path", "not a directory"},
		{`{"sink": {"type": "http", "url": "http://127.0.0.1:1/", "timeout": "0s"}}`, "sink.timeout", "greater than 0"},
		{`{"sink": {"type": "http", "url": "http://127.0.0.1:1/", "batch_size": 0}}`, "sink.batch_size", "between 1 and"},
		{`{"sink": {"type": "http", "url": "http://127.0.0.1:1/", "headers": {"bad name": "x"}}}`, "sink.headers.bad name", "not a valid header name"},
		{`{"sink": {"rotation": {"max_size_mb": 0}}}`, "sink.rotation.max_size_mb", "between 1 and"},
		{`{"include_headers": ["ok", "no spaces"]}`, "include_headers[1]", "not a valid header name"},
		{`{"mask_query": [""]}`, "mask_query[0]", "must not be empty"},
		{`{"fields": {"who": "$header_authorization"}}`, "fields.who", "reads masked header authorization"},
		{`{"mask_headers": ["x-sig"], "fields": {"s": "${header_X-Sig}"}}`, "fields.s", "reads masked header x-sig"},
		{`{"fields": {"x": "$nope"}}`, "fields.x", "unknown variable"},
		{`{"queue_size": 0}`, "queue_size", "between 1 and"},
		{`{"sink": {"flush_timeout": "0s"}}`, "sink.flush_timeout", "greater than 0"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
			fakeframework.WantCheckError(t, Name, tc.config, tc.field, tc.reason) // moectl validate
		})
	}
}

func TestReadsMasked(t *testing.T) {
	m := map[string]bool{"authorization": true, "x-sig": true}
	for src, want := range map[string]string{
		"$header_authorization":        "authorization",
		"a-$header_x-sig.":             "x-sig",
		"$header_x-signature":          "",
		"$header_user-agent $consumer": "",
		"$resp_header_authorization":   "authorization",
	} {
		if got := readsMasked(src, m); got != want {
			t.Errorf("readsMasked(%q) = %q, want %q", src, got, want)
		}
	}
	if strings.Contains(DefaultMaskQuery[0], " ") {
		t.Fatal()
	}
}
