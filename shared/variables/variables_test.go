package variables_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/variables"
)

type grab struct {
	tpl *variables.Template
	out *string
}

func (g grab) OnReceive(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	ctx.SetConsumer(&api.Consumer{Name: "alice", Group: "gold"})
	*g.out = g.tpl.Render(ctx)
	return api.Continue
}

func TestBuiltinsRenderForARequest(t *testing.T) {
	var out string
	tpl := variables.MustCompileTemplate("$method $path $request_uri $host $scheme $remote_addr $remote_port $route_name $cluster $consumer/$consumer_group " +
		"$header_X-User $arg_q $arg_missing $cookie_sid ${query}! $$ $request_id")
	registry.Register(registry.Plugin{Name: "vars-grab", Factory: func(any) api.Filter { return grab{tpl, &out} }})
	t.Cleanup(func() { registry.Unregister("vars-grab") })
	r, err := fakeenvoy.NewPlugin("vars-grab", nil)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Do(fakeenvoy.Request{
		Path:      "/a/b?q=hello%20w&x=1",
		Headers:   [][2]string{{"x-user", "u1"}, {"cookie", "a=1; sid=\"s2\""}, {"x-request-id", "rid-1"}},
		RouteName: "r1", Cluster: "c1",
	})
	if len(res.Violations) > 0 {
		t.Fatal(res.Violations)
	}
	want := "GET /a/b /a/b?q=hello%20w&x=1 example.com http 10.0.0.1 12345 r1 c1 alice/gold u1 hello w  s2 q=hello%20w&x=1! $ rid-1"
	if out != want {
		t.Errorf("got  %q\nwant %q", out, want)
	}
}

// $remote_addr is the client IP without the port (nginx semantics), so keys
// built on it count per client, not per connection; $remote_port has the port.
func TestRemoteAddrIsTheIPWithoutPort(t *testing.T) {
	var out string
	tpl := variables.MustCompileTemplate("$remote_addr|$remote_port")
	registry.Register(registry.Plugin{Name: "vars-remote", Factory: func(any) api.Filter { return grab{tpl, &out} }})
	t.Cleanup(func() { registry.Unregister("vars-remote") })
	r, err := fakeenvoy.NewPlugin("vars-remote", nil)
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{
		"192.0.2.1:5555":   "192.0.2.1|5555",
		"[::1]:443":        "::1|443",
		"[2001:db8::1]:80": "2001:db8::1|80",
		"2001:db8::1":      "2001:db8::1|",
		"/run/envoy.sock":  "/run/envoy.sock|",
	} {
		if res := r.Do(fakeenvoy.Request{RemoteAddr: addr}); len(res.Violations) > 0 {
			t.Fatal(res.Violations)
		}
		if out != want {
			t.Errorf("%s: got %q, want %q", addr, out, want)
		}
	}
	for in, want := range map[string][2]string{
		"":        {"", ""},
		"[broken": {"[broken", ""},
		"[::1]":   {"::1", ""},
		"1.2.3.4": {"1.2.3.4", ""},
	} {
		if ip, port := variables.SplitAddress(in); ip != want[0] || port != want[1] {
			t.Errorf("SplitAddress(%q) = %q, %q; want %q", in, ip, port, want)
		}
	}
}

type onReceive func(api.Context)

func (f onReceive) OnReceive(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	f(ctx)
	return api.Continue
}

func TestRenderCompleteReportsMissingParts(t *testing.T) {
	var got []string
	tpls := []*variables.Template{
		variables.MustCompileTemplate("$route_name:$header_x-user"),
		variables.MustCompileTemplate("$header_x-user"),
		variables.MustCompileTemplate("lit"),
	}
	registry.Register(registry.Plugin{Name: "vars-complete", Factory: func(any) api.Filter {
		return onReceive(func(ctx api.Context) {
			got = got[:0]
			for _, tpl := range tpls {
				s, ok := tpl.RenderComplete(ctx)
				got = append(got, fmt.Sprintf("%s=%v", s, ok))
			}
		})
	}})
	t.Cleanup(func() { registry.Unregister("vars-complete") })
	r, err := fakeenvoy.NewPlugin("vars-complete", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		hdrs [][2]string
		want string
	}{
		{nil, "r1:=false =false lit=true"},
		{[][2]string{{"x-user", ""}}, "r1:=false =false lit=true"},
		{[][2]string{{"x-user", "u"}}, "r1:u=true u=true lit=true"},
	} {
		r.Do(fakeenvoy.Request{Headers: tc.hdrs, RouteName: "r1"})
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("headers %v: got %q, want %q", tc.hdrs, s, tc.want)
		}
	}
}

func TestUnknownVariablesAreConfigErrors(t *testing.T) {
	for _, src := range []string{"$nope", "x $header_", "${unclosed", "$ alone"} {
		if _, err := variables.CompileTemplate(src); err == nil {
			t.Errorf("%q accepted", src)
		}
	}
	_, err := variables.Compile("$hots")
	if err == nil || !strings.Contains(err.Error(), "$host") {
		t.Errorf("error should list known variables: %v", err)
	}
}

func TestPluginRegisteredVariable(t *testing.T) {
	zoneOnce.Do(func() {
		variables.Register("test_zone", func(ctx api.Context) (string, bool) { return "z1", true })
	})
	tpl, err := variables.CompileTemplate("zone=$test_zone.")
	if err != nil {
		t.Fatal(err)
	}
	if got := tpl.Render(nil); got != "zone=z1." {
		t.Errorf("got %q", got)
	}
}

func TestTemplateFieldCompilesWhileDecoding(t *testing.T) {
	var v struct {
		Key *variables.Template `json:"key"`
		Var variables.Var       `json:"var"`
	}
	if err := jsonDecode(`{"key": "$route_name:$header_x-user", "var": "$host"}`, &v); err != nil {
		t.Fatal(err)
	}
	if v.Key.String() != "$route_name:$header_x-user" || v.Var.Name() != "host" {
		t.Errorf("%v %v", v.Key, v.Var.Name())
	}
	if err := jsonDecode(`{"key": "$bogus"}`, &v); err == nil {
		t.Error("unknown variable accepted")
	}
}

// variables are registered for the process; -count=N must not register twice.
var zoneOnce sync.Once
