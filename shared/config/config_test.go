package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/registry"
)

type rule struct {
	Key   string       `json:"key"`
	Limit int          `json:"limit"`
	Every api.Duration `json:"every"`
}

type testConfig struct {
	Name    string            `json:"name"`
	Port    uint16            `json:"port"`
	Ratio   float64           `json:"ratio"`
	Enabled bool              `json:"enabled"`
	Timeout api.Duration      `json:"timeout"`
	Delays  []api.Duration    `json:"delays"`
	Rules   []rule            `json:"rules"`
	Labels  map[string]string `json:"labels"`
	inited  bool
}

func (c *testConfig) Validate() error {
	for i, r := range c.Rules {
		if r.Limit <= 0 {
			return api.FieldErrorf("rules["+itoa(i)+"].limit", "must be > 0, got %d", r.Limit)
		}
	}
	return nil
}

func (c *testConfig) Init(env api.ConfigEnv) error {
	c.inited = env.PluginName() == "cfgtest"
	return nil
}

func itoa(i int) string { return string(rune('0' + i)) }

func init() {
	registry.Register(registry.Plugin{
		Name:      "cfgtest",
		NewConfig: func() any { return &testConfig{Name: "default", Port: 80} },
		Factory:   nopFactory,
	})
	for _, n := range []string{"pa", "pb", "pc", "px", "py"} {
		registry.Register(registry.Plugin{Name: n, NewConfig: func() any { return &testConfig{} }, Factory: nopFactory})
	}
	registry.Register(registry.Plugin{Name: "noconf", Factory: nopFactory})
}

func decode(t *testing.T, raw string) (*testConfig, error) {
	t.Helper()
	p, _ := registry.Get("cfgtest")
	c, err := config.DecodePlugin(p, []byte(raw), false)
	if err != nil {
		return nil, err
	}
	return c.(*testConfig), nil
}

func TestDecodeAppliesDefaultsValidationAndInit(t *testing.T) {
	c, err := decode(t, `{"port": 8080.0, "timeout": "1.5s", "rules": [{"key": "a", "limit": 3}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "default" || c.Port != 8080 || c.Timeout.D().Seconds() != 1.5 || !c.inited || c.Rules[0].Limit != 3 {
		t.Errorf("got %+v", c)
	}
}

func TestDecodeRejectsWithPluginFieldAndReason(t *testing.T) {
	cases := []struct {
		name, raw, field, reason string
	}{
		{"unknown top-level field", `{"nmae": "x"}`, "nmae", "unknown field"},
		{"unknown nested field", `{"rules": [{"key": "a", "limit": 1}, {"kye": "b"}]}`, "rules[1].kye", "unknown field"},
		{"string for int", `{"port": "80"}`, "port", "expected a non-negative integer, got a string"},
		{"fraction for int", `{"rules": [{"limit": 1.5}]}`, "rules[0].limit", "not a valid int"},
		{"out of range", `{"port": 70000}`, "port", "not a valid uint16"},
		{"object for list", `{"rules": {"key": "a"}}`, "rules", "expected a list"},
		{"bool for string map value", `{"labels": {"a": true}}`, "labels.a", "expected a string"},
		{"bad duration", `{"timeout": "soon"}`, "timeout", `invalid duration "soon"`},
		{"bad duration in a list", `{"delays": ["1s", 3, "x"]}`, "delays[2]", `invalid duration "x"`},
		{"bad duration in a nested struct", `{"rules": [{"key": "a", "limit": 1, "every": "often"}]}`, "rules[0].every", "invalid duration"},
		{"validation", `{"rules": [{"key": "a", "limit": 0}]}`, "rules[0].limit", "must be > 0"},
		{"malformed", `{`, "", "malformed JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(t, tc.raw)
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T), want *config.Error", err, err)
			}
			if ce.Plugin != "cfgtest" || (tc.field != "" && ce.Field != tc.field) || !strings.Contains(ce.Reason, tc.reason) {
				t.Errorf("got plugin %q field %q reason %q; want field %q reason ~%q", ce.Plugin, ce.Field, ce.Reason, tc.field, tc.reason)
			}
			if tc.field != "" && !strings.Contains(err.Error(), "field "+tc.field+": ") {
				t.Errorf("message %q does not name the field", err)
			}
			if !strings.Contains(err.Error(), `plugin "cfgtest"`) {
				t.Errorf("message %q does not name the plugin", err)
			}
		})
	}
}

func TestPluginWithoutConfigRejectsFields(t *testing.T) {
	p, _ := registry.Get("noconf")
	if _, err := config.DecodePlugin(p, []byte(`{}`), false); err != nil {
		t.Errorf("{}: %v", err)
	}
	if _, err := config.DecodePlugin(p, []byte(`{"a":1}`), false); err == nil {
		t.Errorf("fields accepted")
	}
}

func TestParseChainErrors(t *testing.T) {
	cases := []struct{ raw, want string }{
		{`{"plugins":[{"name":"nope"}]}`, `plugin "nope": field plugins[0].name: unknown plugin`},
		{`{"plugins":[{"name":"pa"},{"name":"pa"}]}`, "listed twice"},
		{`{"plugins":[{"config":{}}]}`, "missing plugin name"},
		{`{"plugin":[]}`, "unknown field"},
		{`{"plugins":[{"name":"cfgtest","config":{"port":-1}}]}`, `plugin "cfgtest": field port`},
	}
	for _, tc := range cases {
		_, err := config.ParseChain([]byte(tc.raw), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want ~%q", tc.raw, err, tc.want)
		}
	}
}

// destroyable records Destroy calls; its Init fails when the config says so.
type destroyable struct {
	Fail bool `json:"fail"`
	log  *[]string
	name string
}

var destroyLog []string

func (d *destroyable) Init(env api.ConfigEnv) error {
	d.name, d.log = env.PluginName(), &destroyLog
	if d.Fail {
		return errors.New("init failed")
	}
	return nil
}

func (d *destroyable) Destroy() { *d.log = append(*d.log, d.name) }

type panicky struct{}

func (*panicky) Validate() error { panic("boom") }

func init() {
	for _, n := range []string{"da", "db", "dc"} {
		registry.Register(registry.Plugin{Name: n, NewConfig: func() any { return &destroyable{} }, Factory: nopFactory})
	}
	registry.Register(registry.Plugin{Name: "dpanic", NewConfig: func() any { return &panicky{} }, Factory: nopFactory})
}

// A rejected chain must not leak the configs it already initialised (their
// goroutines, connections): they are destroyed before the error returns.
func TestParseChainDestroysInitialisedConfigsOnRejection(t *testing.T) {
	cases := []struct {
		raw, want string
		rejected  bool
	}{
		{`{"plugins":[{"name":"da"},{"name":"db"},{"name":"dc","config":{"fail":true}}]}`, "da,db", true},
		{`{"plugins":[{"name":"da"},{"name":"cfgtest","config":{"port":-1}},{"name":"db"}]}`, "da", true},
		// Names are resolved before any config is initialised: nothing to destroy.
		{`{"plugins":[{"name":"da"},{"name":"nope"}]}`, "", true},
		{`{"plugins":[{"name":"da"},{"name":"da"}]}`, "", true},
		{`{"plugins":[{"name":"da"},{"name":"db"}]}`, "", false}, // accepted: nothing destroyed
	}
	for _, tc := range cases {
		destroyLog = nil
		_, err := config.ParseChain([]byte(tc.raw), false)
		if (err != nil) != tc.rejected {
			t.Errorf("%s: error %v", tc.raw, err)
		}
		if got := strings.Join(destroyLog, ","); got != tc.want {
			t.Errorf("%s: destroyed %q, want %q", tc.raw, got, tc.want)
		}
	}
	// A panic while parsing a later entry (recovered by the caller) also
	// releases the earlier ones.
	destroyLog = nil
	func() {
		defer func() { _ = recover() }()
		config.ParseChain([]byte(`{"plugins":[{"name":"da"},{"name":"dpanic"}]}`), false)
	}()
	if got := strings.Join(destroyLog, ","); got != "da" {
		t.Errorf("after a panic: destroyed %q, want da", got)
	}
}

func names(es []config.Entry) string {
	var out []string
	for _, e := range es {
		n := e.Name
		if e.Disabled {
			n = "-" + n
		}
		out = append(out, n)
	}
	return strings.Join(out, ",")
}

func TestMergeKeepsParentOrderAndPlacesNewPluginsByNeighbour(t *testing.T) {
	parent, err := config.ParseChain([]byte(`{"plugins":[{"name":"pa"},{"name":"pb"},{"name":"pc","disabled":true}]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ route, want string }{
		{`{"plugins":[{"name":"pb","disabled":true}]}`, "pa,-pb,-pc"},
		{`{"plugins":[{"name":"pc"}]}`, "pa,pb,pc"},
		{`{"plugins":[{"name":"px"}]}`, "pa,pb,-pc,px"},
		{`{"plugins":[{"name":"pa"},{"name":"px"}]}`, "pa,px,pb,-pc"},
		{`{"plugins":[{"name":"px"},{"name":"pb"},{"name":"py"}]}`, "pa,px,pb,py,-pc"},
		{`{"plugins":[{"name":"py","disabled":true}]}`, "pa,pb,-pc"},
	}
	for _, tc := range cases {
		route, err := config.ParseChain([]byte(tc.route), true)
		if err != nil {
			t.Fatalf("%s: %v", tc.route, err)
		}
		got, err := config.Merge(parent.Entries, route.Entries)
		if err != nil {
			t.Fatal(err)
		}
		if names(got) != tc.want {
			t.Errorf("route %s: got %s, want %s", tc.route, names(got), tc.want)
		}
	}
}

func TestMergeRouteConfigWins(t *testing.T) {
	parent, _ := config.ParseChain([]byte(`{"plugins":[{"name":"cfgtest","config":{"name":"parent"}}]}`), false)
	route, _ := config.ParseChain([]byte(`{"plugins":[{"name":"cfgtest","config":{"port":1}}]}`), true)
	got, _ := config.Merge(parent.Entries, route.Entries)
	c := got[0].Config.(*testConfig)
	if c.Name != "default" || c.Port != 1 {
		t.Errorf("route config should replace the parent's whole: %+v", c)
	}
}

func TestAnyToJSONAcceptsTypedStructForms(t *testing.T) {
	a, err := config.TypedStruct(`{"a": 1, "b": ["x"]}`)
	if err != nil {
		t.Fatal(err)
	}
	j, err := config.AnyToJSON(a)
	if err != nil || !strings.Contains(string(j), `"b"`) {
		t.Errorf("%s %v", j, err)
	}
	if j, _ := config.AnyToJSON(nil); string(j) != "{}" {
		t.Errorf("nil: %s", j)
	}
}

// CheckChain/CheckPlugin (offline tools) decode and Validate but never Init,
// so nothing starts and nothing needs destroying.
func TestCheckDoesNotInit(t *testing.T) {
	destroyLog = nil
	if err := config.CheckChain([]byte(`{"plugins":[{"name":"da"},{"name":"dc","config":{"fail":true}}]}`), false); err != nil {
		t.Errorf("Init ran: %v", err)
	}
	err := config.CheckChain([]byte(`{"plugins":[{"name":"da"},{"name":"cfgtest","config":{"rules":[{"limit":0}]}}]}`), true)
	if err == nil || !strings.Contains(err.Error(), `plugin "cfgtest": field rules[0].limit: must be > 0`) {
		t.Errorf("Validate error: %v", err)
	}
	p, _ := registry.Get("dc")
	if err := config.CheckPlugin(p, []byte(`{"fail":true}`), false); err != nil {
		t.Errorf("CheckPlugin ran Init: %v", err)
	}
	if err := config.CheckPlugin(p, []byte(`{"fial":true}`), true); err == nil || !strings.Contains(err.Error(), "field fial: unknown field") {
		t.Errorf("CheckPlugin: %v", err)
	}
	if len(destroyLog) != 0 {
		t.Errorf("destroyed %v", destroyLog)
	}
}

// nopFilter is the smallest valid filter: one phase that lets requests through.
type nopFilter struct{}

func (nopFilter) OnReceive(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	return api.Continue
}

func nopFactory(any) api.Filter { return nopFilter{} }

// initOnly's factory needs an initialised config (like real plugins reading
// what Init built), so the contract can only be checked at parse time.
type initOnly struct{ ready bool }

func (c *initOnly) Init(api.ConfigEnv) error { c.ready = true; return nil }

type noPhase struct{}

func (noPhase) Receive() {}

func TestParseRefusesAFilterThatBreaksTheContract(t *testing.T) {
	registry.Register(registry.Plugin{Name: "cfg-nophase", NewConfig: func() any { return &initOnly{} }, Factory: func(c any) api.Filter {
		if !c.(*initOnly).ready {
			panic("not initialised")
		}
		return noPhase{}
	}})
	t.Cleanup(func() { registry.Unregister("cfg-nophase") })
	_, err := config.ParseChain([]byte(`{"plugins":[{"name":"cfg-nophase"}]}`), false)
	if err == nil || !strings.Contains(err.Error(), `invalid config of plugin "cfg-nophase": filter type config_test.noPhase implements no phase`) {
		t.Fatalf("got %v", err)
	}
}

type checkOnlySpy struct{ sawCheckOnly, destroyed bool }

var lastSpy *checkOnlySpy

func (c *checkOnlySpy) Init(env api.ConfigEnv) error {
	c.sawCheckOnly = env.CheckOnly()
	lastSpy = c
	return nil
}
func (c *checkOnlySpy) Destroy() { c.destroyed = true }

// moectl's full check runs Init in check-only mode and destroys the config.
func TestFullChecksRunInitInCheckOnlyModeAndDestroy(t *testing.T) {
	registry.Register(registry.Plugin{Name: "cfg-checkonly", NewConfig: func() any { return &checkOnlySpy{} }, Factory: nopFactory})
	t.Cleanup(func() { registry.Unregister("cfg-checkonly") })
	if err := config.CheckChainFull([]byte(`{"plugins":[{"name":"cfg-checkonly"}]}`), false); err != nil {
		t.Fatal(err)
	}
	if lastSpy == nil || !lastSpy.sawCheckOnly || !lastSpy.destroyed {
		t.Fatalf("chain: %+v", lastSpy)
	}
	lastSpy = nil
	p, _ := registry.Get("cfg-checkonly")
	if err := config.CheckPluginFull(p, []byte(`{}`), false); err != nil || !lastSpy.sawCheckOnly || !lastSpy.destroyed {
		t.Fatalf("plugin: %v %+v", err, lastSpy)
	}
	lastSpy = nil
	if _, err := config.ParseChain([]byte(`{"plugins":[{"name":"cfg-checkonly"}]}`), false); err != nil || lastSpy.sawCheckOnly {
		t.Fatalf("a real parse in check-only mode: %v %+v", err, lastSpy)
	}
}
