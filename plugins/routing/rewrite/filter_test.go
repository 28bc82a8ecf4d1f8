package rewrite

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestPrefixRewrite(t *testing.T) {
	c, env := parse(t, `{"path": {"prefix": "/api/v1/", "replacement": "/v1/"}}`)
	for _, tc := range []struct{ in, want string }{
		{"/api/v1/items", "/v1/items"},
		{"/api/v1/items?a=1&b", "/v1/items?a=1&b"}, // the query is kept as it was
		{"/api/v1/", "/v1/"},
		{"/api/v1", "/api/v1"}, // no trailing slash: no prefix match
		{"/api/v2/items", "/api/v2/items"},
		{"/API/v1/items", "/API/v1/items"}, // case-sensitive, as the route prefix
		{"/api/v1/../../admin", "/admin"},  // normalized first: ".." cannot climb out of the rewrite
		{"/api/v1/a/../b", "/v1/b"},
		{"/api/v1//x", "/v1//x"},                   // merge_slashes off
		{"/api/v1/%7Ex/a%2fb", "/v1/~x/a%2Fb"},     // unreserved decoded, %2F kept
		{"/api/%76%31/x", "/v1/x"},                 // "%76%31" is "v1": decoded before the prefix compare
		{"/other?q=/api/v1/", "/other?q=/api/v1/"}, // the query is not the path
	} {
		if got, _, _ := run(t, c, tc.in); got != tc.want {
			t.Errorf("%s -> %s, want %s", tc.in, got, tc.want)
		}
	}
	if env.Count("path_rewritten") != 7 || env.Count("path_normalized") != 4 {
		t.Errorf("counters %v", env.Values())
	}
}

func TestPrefixToRootAndOriginalPath(t *testing.T) {
	c, _ := parse(t, `{"path": {"prefix": "/svc", "replacement": ""}}`)
	for _, tc := range []struct{ in, want string }{{"/svc", "/"}, {"/svc/x", "/x"}, {"/svcx", "/x"}, {"/svc?a=1", "/?a=1"}} {
		got, _, ctx := run(t, c, tc.in)
		if got != tc.want {
			t.Errorf("%s -> %s, want %s", tc.in, got, tc.want)
		}
		if v, _ := ctx.Req.Get("x-envoy-original-path"); v != tc.in {
			t.Errorf("x-envoy-original-path = %q, want %q", v, tc.in)
		}
	}
	// As Envoy's prefix_rewrite: the rest is appended as it is ("/" + "/x").
	c, _ = parse(t, `{"path": {"prefix": "/svc", "replacement": "/"}, "original_path_header": ""}`)
	if p, _, ctx := run(t, c, "/svc/x"); p != "//x" || ctx.Req.Values("x-envoy-original-path") != nil {
		t.Errorf("path %s headers %v", p, ctx.Req.Headers)
	}
}

func TestNormalizeOffAndInvalidPaths(t *testing.T) {
	c, env := parse(t, `{"path": {"prefix": "/a/", "replacement": "/b/", "normalize": false}}`)
	if got, _, _ := run(t, c, "/a/../%zz"); got != "/b/../%zz" {
		t.Errorf("normalize off: %s", got)
	}
	c, env = parse(t, `{"path": {"merge_slashes": true}}`)
	if got, _, _ := run(t, c, "//a//./b/"); got != "/a/b/" {
		t.Errorf("normalize only: %s", got)
	}
	_, _, ctx := run(t, c, "/a%zz?x")
	if ctx.Replied == nil || ctx.Replied.Code != 400 || !strings.Contains(ctx.Replied.Body, "bad percent-encoding") || env.Count("invalid_path") != 1 {
		t.Fatalf("invalid path: %+v %v", ctx.Replied, env.Values())
	}
	c, _ = parse(t, `{"path": {"prefix": "/"}, "invalid_path_status": 404}`)
	if _, _, ctx := run(t, c, "/%"); ctx.Replied == nil || ctx.Replied.Code != 404 {
		t.Fatalf("invalid_path_status: %+v", ctx.Replied)
	}
}

func TestQueryRewrite(t *testing.T) {
	c, _ := parse(t, `{"query": {
		"remove": ["debug", "a b"],
		"set": [{"name": "source", "value": "gateway"}, {"name": "user", "value": "$header_x-user"}],
		"add": [{"name": "tag", "value": "x&y=z"}, {"name": "tag", "value": "2"}]}}`)
	for _, tc := range []struct{ in, user, want string }{
		{"/p", "", "/p?source=gateway&user=&tag=x%26y%3Dz&tag=2"},
		{"/p?", "", "/p?source=gateway&user=&tag=x%26y%3Dz&tag=2"},
		{"/p?debug=1&x=1&debug&debug=2", "u", "/p?x=1&source=gateway&user=u&tag=x%26y%3Dz&tag=2"},
		{"/p?a+b=1&a%20b=2&ab=3", "", "/p?ab=3&source=gateway&user=&tag=x%26y%3Dz&tag=2"}, // names compared decoded
		{"/p?user=1&x=%zz&user=2&source=old", "bob smith", "/p?user=bob+smith&x=%zz&source=gateway&tag=x%26y%3Dz&tag=2"},
		{"/p?&&x=1", "", "/p?&&x=1&source=gateway&user=&tag=x%26y%3Dz&tag=2"}, // empty parts kept
		{"/p?%zz=1", "", "/p?%zz=1&source=gateway&user=&tag=x%26y%3Dz&tag=2"},
	} {
		got, _, _ := run(t, c, tc.in, "x-user", tc.user)
		if got != tc.want {
			t.Errorf("%s -> %s\n want %s", tc.in, got, tc.want)
		}
	}
	c, _ = parse(t, `{"query": {"remove": ["a"]}}`)
	for _, tc := range []struct{ in, want string }{{"/p?a=1", "/p"}, {"/p?a=1&b=2&a", "/p?b=2"}, {"/p?b", "/p?b"}} {
		if got, _, _ := run(t, c, tc.in); got != tc.want {
			t.Errorf("%s -> %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestHostMatchAndEverythingTogether(t *testing.T) {
	c, env := parse(t, `{
		"match": {"headers": [{"name": "x-rewrite"}]},
		"path": {"regex": "^/users/([0-9]+)/orders$", "replacement": "/orders/by-user/\\1"},
		"host": "orders.internal:8443",
		"query": {"add": [{"name": "via", "value": "$route_name"}]}}`)
	req := fakeframework.NewRequest("GET", "/users/42/orders?x=1", "x-rewrite", "1")
	_ = req.SetHost("api.example.com")
	ctx := fakeframework.NewContext(Name, req)
	ctx.RouteName = "users"
	if st := (*filter)(c).OnReceive(ctx, req, nil, nil); st != api.Continue {
		t.Fatal(st)
	}
	if req.Path() != "/orders/by-user/42?x=1&via=users" || req.Host() != "orders.internal:8443" {
		t.Fatalf("%s %s", req.Path(), req.Host())
	}
	if v, _ := req.Get("x-envoy-original-path"); v != "/users/42/orders?x=1" {
		t.Fatalf("original path %q", v)
	}
	if p, h, _ := run(t, c, "/users/42/orders"); p != "/users/42/orders" || h != "example.com" {
		t.Fatalf("not matched: %s %s", p, h)
	}
	want := map[string]int64{"rewritten": 1, "path_rewritten": 1, "host_rewritten": 1, "query_rewritten": 1, "not_matched": 1}
	for k, v := range want {
		if env.Value(k) != v {
			t.Errorf("%s = %d, want %d", k, env.Value(k), v)
		}
	}
	// A huge path is handled like any other.
	huge := "/users/" + strings.Repeat("9", 60<<10) + "/orders"
	req = fakeframework.NewRequest("GET", huge, "x-rewrite", "1")
	fakeframework.Run(Name, (*filter)(c), req, nil)
	if !strings.HasPrefix(req.Path(), "/orders/by-user/999") || !strings.HasSuffix(req.Path(), "9?via=") {
		t.Fatalf("huge path: %.40s...", req.Path())
	}
}

func TestPhaseFollowsTheConfig(t *testing.T) {
	c, _ := parse(t, `{"host": "a"}`)
	if c.Needs().Phase != api.AfterRoute {
		t.Fatal("default phase")
	}
	c, _ = parse(t, `{"host": "a", "phase": "before_route"}`)
	if c.Needs().Phase != api.BeforeRoute {
		t.Fatal("before_route")
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "path", "would do nothing"},
		{`{"host": "a", "phase": "early"}`, "phase", "after_route"},
		{`{"path": {"prefix": "/a", "regex": "a"}}`, "path", "not both"},
		{`{"path": {"replacement": "/x"}}`, "path.replacement", "needs prefix or regex"},
		{`{"path": {"normalize": false}}`, "path", "give prefix or regex, or normalize"},
		{`{"path": {"prefix": "a"}}`, "path.prefix", "must start with '/'"},
		{`{"path": {"prefix": "/a?b"}}`, "path.prefix", "without the query"},
		{`{"path": {"prefix": "/a", "replacement": "/b?x=1"}}`, "path.replacement", "change the query with query"},
		{`{"path": {"prefix": "/a", "replacement": "/b c"}}`, "path.replacement", "spaces"},
		{`{"path": {"regex": "(", "replacement": "/"}}`, "path.regex", "missing closing )"},
		{`{"path": {"regex": "^/(a)", "replacement": "/\\2"}}`, "path.replacement", `\2 refers to a capture group the regex does not have (it has 1)`},
		{`{"path": {"regex": "^/a", "replacement": "/\\x"}}`, "path.replacement", `only \0..\9`},
		{`{"path": {"regex": "^/a", "replacement": "/\\"}}`, "path.replacement", "lone backslash"},
		{`{"host": "a b"}`, "host", "not a valid host"},
		{`{"host": "user@h"}`, "host", "not a valid host"},
		{`{"host": "h/x"}`, "host", "not a valid host"},
		{`{"query": {}}`, "query", "give remove, set or add"},
		{`{"query": {"remove": [""]}}`, "query.remove[0]", "is required"},
		{`{"query": {"set": [{"name": "a"}]}}`, "query.set[0].value", "is required"},
		{`{"query": {"add": [{"name": "a\n", "value": "1"}]}}`, "query.add[0].name", "control characters"},
		{`{"query": {"add": [{"name": "a", "value": "$nope"}]}}`, "query.add[0].value", "unknown variable $nope"},
		{`{"host": "a", "original_path_header": "x y"}`, "original_path_header", "not a valid header name"},
		{`{"host": "a", "invalid_path_status": 302}`, "invalid_path_status", "4xx or 5xx"},
		{`{"host": "a", "match": {"path": {"regex": "("}}}`, "match.path", "regex"},
	} {
		t.Run(tc.field+" "+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}
