package variables_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/fakehost"
	"github.com/moeproxy/moe/shared/registry"
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
	tpl := variables.MustCompileTemplate("$method $path $request_uri $host $scheme $remote_addr $route_name $cluster $consumer/$consumer_group " +
		"$header_X-User $arg_q $arg_missing $cookie_sid ${query}! $$ $request_id")
	registry.Register(registry.Plugin{Name: "vars-grab", Factory: func(any) api.Filter { return grab{tpl, &out} }})
	t.Cleanup(func() { registry.Unregister("vars-grab") })
	r, err := fakehost.NewPlugin("vars-grab", nil)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Do(fakehost.Request{
		Path:      "/a/b?q=hello%20w&x=1",
		Headers:   [][2]string{{"x-user", "u1"}, {"cookie", "a=1; sid=\"s2\""}, {"x-request-id", "rid-1"}},
		RouteName: "r1", Cluster: "c1",
	})
	if len(res.Violations) > 0 {
		t.Fatal(res.Violations)
	}
	want := "GET /a/b /a/b?q=hello%20w&x=1 example.com http 10.0.0.1:12345 r1 c1 alice/gold u1 hello w  s2 q=hello%20w&x=1! $ rid-1"
	if out != want {
		t.Errorf("got  %q\nwant %q", out, want)
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
