package headermutation

import (
	"reflect"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestRequestMutations(t *testing.T) {
	for _, tc := range []struct {
		name, mutations string
		path            string
		in              []string
		want            map[string][]string // headers checked (nil value: absent)
		applied         uint64
	}{
		{"set replaces every value", `[{"op": "set", "name": "X-A", "value": "new"}]`, "/",
			[]string{"x-a", "1", "x-a", "2"}, map[string][]string{"x-a": {"new"}}, 1},
		{"set adds when absent", `[{"op": "set", "name": "x-a", "value": "new"}]`, "/",
			nil, map[string][]string{"x-a": {"new"}}, 1},
		{"add only when absent", `[{"op": "add", "name": "x-a", "value": "new"}, {"op": "add", "name": "x-b", "value": "new"}]`, "/",
			[]string{"x-a", "old"}, map[string][]string{"x-a": {"old"}, "x-b": {"new"}}, 1},
		{"append one more value", `[{"op": "append", "name": "x-a", "value": "2"}]`, "/",
			[]string{"x-a", "1"}, map[string][]string{"x-a": {"1", "2"}}, 1},
		{"remove", `[{"op": "remove", "name": "x-a"}, {"op": "remove", "name": "x-absent"}]`, "/",
			[]string{"x-a", "1", "x-a", "2", "x-b", "keep"}, map[string][]string{"x-a": nil, "x-b": {"keep"}}, 1},
		{"values from variables", `[{"op": "set", "name": "x-who", "value": "$arg_user@$host ($method)"}]`, "/p?user=alice",
			nil, map[string][]string{"x-who": {"alice@example.com (GET)"}}, 1},
		{"in order: a value sees earlier mutations", `[{"op": "set", "name": "x-a", "value": "one"}, {"op": "set", "name": "x-b", "value": "$header_x-a+"}]`, "/",
			nil, map[string][]string{"x-a": {"one"}, "x-b": {"one+"}}, 2},
		{"remove then set: the client's copy never survives", `[{"op": "remove", "name": "x-user"}, {"op": "set", "name": "x-user", "value": "$arg_user"}]`, "/",
			[]string{"x-user", "spoofed"}, map[string][]string{"x-user": nil}, 1},
		{"empty value skipped", `[{"op": "set", "name": "x-a", "value": "$arg_nope"}]`, "/",
			[]string{"x-a", "old"}, map[string][]string{"x-a": {"old"}}, 0},
		{"empty value kept", `[{"op": "set", "name": "x-a", "value": "$arg_nope", "keep_empty": true}]`, "/",
			[]string{"x-a", "old"}, map[string][]string{"x-a": {""}}, 1},
		{"condition true", `[{"op": "set", "name": "x-debug", "value": "on", "when": "request.query_params['debug'] == '1'"}]`, "/?debug=1",
			nil, map[string][]string{"x-debug": {"on"}}, 1},
		{"condition false", `[{"op": "set", "name": "x-debug", "value": "on", "when": "request.query_params['debug'] == '1'"}]`, "/?debug=0",
			nil, map[string][]string{"x-debug": nil}, 0},
		{"condition error: skipped", `[{"op": "set", "name": "x-debug", "value": "on", "when": "request.headers['x-missing'] == '1'"}]`, "/",
			nil, map[string][]string{"x-debug": nil}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, `{"request": `+tc.mutations+`}`)
			req := fakeframework.NewRequest("GET", tc.path, tc.in...)
			if _, st := fakeframework.Run(Name, newFilter(c).(api.ReceiverFilter), req, nil); st != api.Continue {
				t.Fatal(st)
			}
			for k, want := range tc.want {
				if got := req.Values(k); !reflect.DeepEqual(got, want) && !(len(got) == 0 && want == nil) {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if got := env.Count("request_mutations"); got != tc.applied {
				t.Errorf("request_mutations = %d, want %d", got, tc.applied)
			}
		})
	}
}

// CR, LF and other control characters from a variable never reach a header:
// a percent-decoded query argument cannot inject a header line.
func TestBuiltValuesAreSanitized(t *testing.T) {
	c, env := parse(t, `{"request": [{"op": "set", "name": "x-user", "value": "$arg_user"}]}`)
	req := fakeframework.NewRequest("GET", "/?user=alice%0D%0Ax-admin:%201%00%7F%09end")
	fakeframework.Run(Name, newFilter(c).(api.ReceiverFilter), req, nil)
	if got, _ := req.Get("x-user"); got != "alice  x-admin: 1  \tend" {
		t.Fatalf("x-user = %q", got)
	}
	if _, ok := req.Get("x-admin"); ok || env.Count("sanitized_values") != 1 {
		t.Fatalf("x-admin present %v, sanitized %d", ok, env.Count("sanitized_values"))
	}
	for _, tc := range []struct{ in, out string }{
		{"plain value", "plain value"}, {"tab\tok", "tab\tok"}, {"\r\n", "  "}, {"a\x00b", "a b"}, {"é ü", "é ü"},
	} {
		if got, _ := sanitize(tc.in); got != tc.out {
			t.Errorf("sanitize(%q) = %q, want %q", tc.in, got, tc.out)
		}
	}
	if n := testing.AllocsPerRun(100, func() { sanitize("a clean value") }); n != 0 {
		t.Errorf("a clean value allocates %v times", n)
	}
}

func TestResponseMutations(t *testing.T) {
	c, env := parse(t, `{"response": [
		{"op": "set", "name": "x-served-by", "value": "moe $route_name"},
		{"op": "remove", "name": "x-upstream"},
		{"op": "set", "name": "cache-control", "value": "no-store", "when": "response.code >= 400"},
		{"op": "append", "name": "x-status", "value": "$status"}]}`)
	f := newFilter(c)
	if _, ok := f.(api.ReceiverFilter); ok {
		t.Fatalf("a response-only config has a request hook: %T", f)
	}
	for _, tc := range []struct {
		status int
		cache  string
	}{{200, ""}, {404, "no-store"}} {
		req := fakeframework.NewRequest("GET", "/")
		resp := fakeframework.NewResponse(tc.status, "x-upstream", "u1")
		ctx := fakeframework.NewContext(Name, req).WithResponse(resp)
		ctx.RouteName = "orders"
		if st := f.(api.SenderFilter).Append(ctx, resp, nil, nil); st != api.Continue {
			t.Fatal(st)
		}
		if v, _ := resp.Get("x-served-by"); v != "moe orders" {
			t.Errorf("%d: x-served-by %q", tc.status, v)
		}
		if _, ok := resp.Get("x-upstream"); ok {
			t.Errorf("%d: x-upstream kept", tc.status)
		}
		if v, _ := resp.Get("cache-control"); v != tc.cache {
			t.Errorf("%d: cache-control %q, want %q", tc.status, v, tc.cache)
		}
	}
	if env.Count("response_mutations") != 2*3+1 {
		t.Errorf("response_mutations = %d", env.Count("response_mutations"))
	}
}

func TestFilterTypeAndNeeds(t *testing.T) {
	for _, tc := range []struct {
		config     string
		recv, send bool
		phase      api.Phase
	}{
		{`{"request": [{"op": "remove", "name": "x"}]}`, true, false, api.AfterRoute},
		{`{"response": [{"op": "remove", "name": "x"}]}`, false, true, api.AfterRoute},
		{`{"phase": "before_route", "request": [{"op": "remove", "name": "x"}], "response": [{"op": "remove", "name": "x"}]}`, true, true, api.BeforeRoute},
	} {
		c, _ := parse(t, tc.config)
		f := newFilter(c)
		_, recv := f.(api.ReceiverFilter)
		_, send := f.(api.SenderFilter)
		if n := c.Needs(); recv != tc.recv || send != tc.send || n.Phase != tc.phase || n.MayBlock != 0 || n.RequestBody != api.HeadersOnly {
			t.Errorf("%s: recv %v send %v needs %+v", tc.config, recv, send, n)
		}
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "request", "give request or response mutations"},
		{`{"phase": "early", "request": [{"op": "remove", "name": "x"}]}`, "phase", "must be one of after_route, before_route"},
		{`{"request": [{"op": "replace", "name": "x", "value": "v"}]}`, "request[0].op", "must be one of set, add, append, remove"},
		{`{"request": [{"op": "set", "name": "x y", "value": "v"}]}`, "request[0].name", "not a valid header name"},
		{`{"request": [{"op": "set", "name": ":path", "value": "/"}]}`, "request[0].name", "not a valid header name"},
		{`{"request": [{"op": "set", "name": "Content-Length", "value": "1"}]}`, "request[0].name", "framing is the proxy's"},
		{`{"response": [{"op": "remove", "name": "transfer-encoding"}]}`, "response[0].name", "framing is the proxy's"},
		{`{"request": [{"op": "set", "name": "host", "value": "a"}]}`, "request[0].name", "host_rewrite"},
		{`{"request": [{"op": "set", "name": "x"}]}`, "request[0].value", "is required for set"},
		{`{"request": [{"op": "remove", "name": "x", "value": "v"}]}`, "request[0].value", "remove takes no value"},
		{`{"request": [{"op": "set", "name": "x", "value": "$nope"}]}`, "request[0].value", "unknown variable $nope"},
		{`{"response": [{"op": "set", "name": "x", "value": "v", "when": "response.code > 'a'"}]}`, "response[0].when", "line 1"},
		{`{"response": [{"op": "set", "name": "x", "value": "v", "when": "'a'"}]}`, "response[0].when", "want bool"},
		{`{"request": [{"op": "set", "name": "x", "value": "v", "if": "true"}]}`, "request[0].if", "unknown field"},
	} {
		t.Run(tc.field+"/"+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}

// A condition that fails to evaluate skips its mutation and is counted.
func TestConditionErrorsAreCounted(t *testing.T) {
	c, env := parse(t, `{"request": [{"op": "set", "name": "x-debug", "value": "on", "when": "request.headers['x-missing'] == '1'"}]}`)
	req := fakeframework.NewRequest("GET", "/")
	fakeframework.Run(Name, newFilter(c).(api.ReceiverFilter), req, nil)
	if _, ok := req.Get("x-debug"); ok || env.Count("condition_errors") != 1 {
		t.Fatalf("x-debug set %v, condition_errors %d", ok, env.Count("condition_errors"))
	}
}
