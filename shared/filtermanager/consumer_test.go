package filtermanager_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// A minimal auth plugin with a chain-level credential: x-key identifies the
// consumer whose credential has that key.
type keyCred struct {
	Key string `json:"key"`
}

func (k *keyCred) Validate() error {
	if len(k.Key) < 3 {
		return api.FieldErrorf("key", "too short")
	}
	return nil
}

type keyConsumer struct {
	consumer.Spec
	keyCred
}

type keyConfig struct {
	Consumers []keyConsumer `json:"consumers"`
	byKey     map[string]*api.Consumer
}

func (c *keyConfig) Init(env api.ConfigEnv) error {
	entries, err := consumer.Collect(env, "consumers", c.Consumers, func(x *keyConsumer) (*consumer.Spec, *keyCred) { return &x.Spec, &x.keyCred })
	if err != nil {
		return err
	}
	c.byKey = map[string]*api.Consumer{}
	for _, e := range entries {
		c.byKey[e.Credential.Key] = e.Consumer
	}
	return nil
}

type keyFilter struct{ c *keyConfig }

func (f keyFilter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	k, _ := h.Get("x-key")
	c := f.c.byKey[k]
	if c == nil {
		return ctx.Reply(401, "who are you", nil)
	}
	consumer.Identify(ctx, h, c, "x-consumer")
	return api.Continue
}

// stampConfig stamps its tag on the request (x-tag) and the response (x-seen).
type stampConfig struct {
	Tag string `json:"tag"`
}

type stampFilter struct{ c *stampConfig }

func (f stampFilter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	appendHeader(h, "x-tag", f.c.Tag)
	return api.Continue
}

func (f stampFilter) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	appendHeader(h, "x-seen", f.c.Tag)
	return api.Continue
}

func registerConsumerPlugins(t *testing.T) (auth, tag, asyncTag string) {
	t.Helper()
	auth, tag, asyncTag = "c-key-auth", "c-tag", "c-tag-async"
	for _, p := range []registry.Plugin{
		{Name: auth, NewConfig: func() any { return &keyConfig{} }, NewCredential: func() any { return &keyCred{} },
			Factory: func(c any) api.Filter { return keyFilter{c.(*keyConfig)} }},
		{Name: tag, NewConfig: func() any { return &stampConfig{Tag: "default"} }, Factory: func(c any) api.Filter { return stampFilter{c.(*stampConfig)} }},
		{Name: asyncTag, NewConfig: func() any { return &stampConfig{Tag: "async-default"} }, Factory: func(c any) api.Filter { return stampFilter{c.(*stampConfig)} },
			Needs: api.Needs{MayBlock: api.BlockReceive | api.BlockSend}},
	} {
		if _, ok := registry.Get(p.Name); !ok {
			registry.Register(p)
		}
	}
	return
}

func parseMoe(t *testing.T, js string) (any, error) {
	t.Helper()
	return fakeenvoy.ParseFilter(filtermanager.Parser{}, js)
}

func TestChainConsumersAreIdentifiedByAuthPlugins(t *testing.T) {
	auth, _, _ := registerConsumerPlugins(t)
	cfg, err := parseMoe(t, `{
		"plugins": [{"name": "`+auth+`", "config": {"consumers": [{"name": "own", "key": "own-key"}]}}],
		"consumers": [{"name": "alice", "group": "admins", "auth": {"`+auth+`": {"key": "alice-key"}}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"alice-key": "alice", "own-key": "own"} {
		res := do(t, cfg, fakeenvoy.Request{Headers: [][2]string{{"x-key", key}}})
		if res.Status != 200 || res.Upstream.Headers["x-consumer"][0] != want {
			t.Errorf("key %s: status %d upstream %v", key, res.Status, res.Upstream)
		}
	}
}

func TestChainConsumerErrorsNameTheConsumerAndField(t *testing.T) {
	auth, tag, _ := registerConsumerPlugins(t)
	chain := `"plugins": [{"name": "` + auth + `"}, {"name": "` + tag + `"}]`
	for _, tc := range []struct{ name, consumers, want string }{
		{"bad credential", `[{"name": "a", "auth": {"` + auth + `": {"key": "x"}}}]`,
			`invalid config of plugin "c-key-auth": field consumers[0].auth.c-key-auth.key: too short`},
		{"unknown credential field", `[{"name": "a", "auth": {"` + auth + `": {"kee": "abcd"}}}]`,
			`field consumers[0].auth.c-key-auth.kee: unknown field`},
		{"plugin without credentials", `[{"name": "a", "auth": {"` + tag + `": {}}}]`,
			`field consumers[0].auth.c-tag: this plugin takes no consumer credentials`},
		{"duplicate name", `[{"name": "a"}, {"name": "a"}]`, `field consumers[1].name: consumer "a" is also consumers[0]`},
		{"empty name", `[{"group": "g"}]`, `field consumers[0].name: must not be empty`},
		{"auth plugin per consumer", `[{"name": "a", "plugins": [{"name": "` + auth + `"}]}]`,
			`field consumers[0].plugins[0]: an auth plugin cannot be a per-consumer plugin`},
		{"bad per-consumer config", `[{"name": "a", "plugins": [{"name": "` + tag + `", "config": {"tags": "x"}}]}]`,
			`field consumers[0].plugins[0].config.tags: unknown field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseMoe(t, `{`+chain+`, "consumers": `+tc.consumers+`}`)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := fakeenvoy.ParseRoute(filtermanager.Parser{}, `{"plugins": [], "consumers": [{"name": "a"}]}`); err == nil || !strings.Contains(err.Error(), "field consumers: consumers are defined in the filter-level config") {
		t.Errorf("route-level consumers: %v", err)
	}
	// A credential for a plugin the chain does not have would never be read.
	if _, err := parseMoe(t, `{"plugins": [], "consumers": [{"name": "a", "auth": {"`+auth+`": {"key": "abcd"}}}]}`); err == nil || !strings.Contains(err.Error(), "not in this filter's plugin list") {
		t.Errorf("credential for an absent plugin: %v", err)
	}
}

func TestPerConsumerPluginsRunForThatConsumerOnly(t *testing.T) {
	auth, tag, asyncTag := registerConsumerPlugins(t)
	for _, tp := range []string{tag, asyncTag} {
		t.Run(tp, func(t *testing.T) {
			cfg, err := parseMoe(t, `{
				"plugins": [{"name": "`+auth+`"}, {"name": "`+tp+`"}],
				"consumers": [
					{"name": "alice", "auth": {"`+auth+`": {"key": "alice-key"}}, "plugins": [{"name": "`+tp+`", "config": {"tag": "alice"}}]},
					{"name": "bob", "auth": {"`+auth+`": {"key": "bob-key"}}, "plugins": [{"name": "`+tp+`", "disabled": true}]},
					{"name": "carol", "auth": {"`+auth+`": {"key": "carol-key"}}}]}`)
			if err != nil {
				t.Fatal(err)
			}
			for key, want := range map[string]string{"alice-key": "alice", "bob-key": "", "carol-key": "default"} {
				if tp == asyncTag && want == "default" {
					want = "async-default"
				}
				res := do(t, cfg, fakeenvoy.Request{Headers: [][2]string{{"x-key", key}}})
				got, seen := "", ""
				if v := res.Upstream.Headers["x-tag"]; len(v) > 0 {
					got = v[0]
				}
				if v := res.Headers["x-seen"]; len(v) > 0 {
					seen = v[0]
				}
				if res.Status != 200 || got != want || seen != want {
					t.Errorf("%s: status %d, upstream x-tag %q, response x-seen %q, want %q", key, res.Status, got, seen, want)
				}
			}
		})
	}
}

func TestPerConsumerPluginMustRunAfterTheAuthPlugin(t *testing.T) {
	auth, tag, _ := registerConsumerPlugins(t)
	_, err := parseMoe(t, `{"plugins": [{"name": "`+tag+`"}, {"name": "`+auth+`"}],
		"consumers": [{"name": "alice", "plugins": [{"name": "`+tag+`", "config": {"tag": "alice"}}]}]}`)
	if err == nil || !strings.Contains(err.Error(), `consumers[0].plugins: consumer "alice" changes plugin c-tag, which runs before c-key-auth identifies the consumer`) {
		t.Fatalf("got %v", err)
	}
	// Adding a plugin the chain does not have is fine: it is appended after.
	if _, err := parseMoe(t, `{"plugins": [{"name": "`+auth+`"}],
		"consumers": [{"name": "alice", "plugins": [{"name": "`+tag+`"}]}]}`); err != nil {
		t.Fatal(err)
	}
}

// The consumer travels to later golang filters in Envoy's filter state: the
// first filter writes it, a later one reads it when it has not set one.
func TestConsumerAndStringStateCrossGolangFilters(t *testing.T) {
	auth, _, _ := registerConsumerPlugins(t)
	first, err := parseMoe(t, `{"plugins": [{"name": "`+auth+`", "config": {"consumers": [{"name": "alice", "group": "admins", "key": "alice-key"}]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	setter := plugin(t, api.Needs{}, recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		ctx.SetState("route_target", "blue")
		ctx.SetState("not-shared", 42)
		return api.Continue
	}})
	res := do(t, first, fakeenvoy.Request{Headers: [][2]string{{"x-key", "alice-key"}}})
	var c api.Consumer
	if err := json.Unmarshal([]byte(res.FilterState["moe.consumer"]), &c); err != nil || c.Name != "alice" || c.Group != "admins" {
		t.Fatalf("filter state %v (%v)", res.FilterState, err)
	}
	res2 := do(t, mustChain(t, setter), fakeenvoy.Request{})
	if res2.FilterState["moe.state.route_target"] != "blue" || len(res2.FilterState) != 1 {
		t.Fatalf("string state not shared (or more shared): %v", res2.FilterState)
	}

	var gotConsumer *api.Consumer
	var gotTarget any
	var gotOther bool
	reader := plugin(t, api.Needs{}, recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		gotConsumer = ctx.Consumer()
		gotTarget, _ = ctx.GetState("route_target")
		_, gotOther = ctx.GetState("not-shared")
		ctx.Consumer() // read once: the second call costs no SDK call
		return api.Continue
	}})
	state := map[string]string{"moe.consumer": res.FilterState["moe.consumer"], "moe.state.route_target": "blue"}
	res3 := do(t, mustChain(t, reader), fakeenvoy.Request{FilterState: state})
	if gotConsumer == nil || gotConsumer.Name != "alice" || gotConsumer.Group != "admins" || gotTarget != "blue" || gotOther {
		t.Fatalf("second filter saw consumer %+v, target %v, other %v", gotConsumer, gotTarget, gotOther)
	}
	if res3.FilterStateReads != 3 || res3.FilterStateWrites != 0 {
		t.Errorf("filter state reads %d writes %d, want 3 reads (consumer, two keys) and no write", res3.FilterStateReads, res3.FilterStateWrites)
	}
	// Malformed filter state is ignored, not trusted.
	gotConsumer = nil
	do(t, mustChain(t, reader), fakeenvoy.Request{FilterState: map[string]string{"moe.consumer": "{not json"}})
	if gotConsumer != nil {
		t.Errorf("malformed consumer accepted: %+v", gotConsumer)
	}
}

// A plugin that knows only the consumer's name (an external auth service
// answered it) gets the chain's definition: group, attributes and plugins.
func TestConsumerSetByNameTakesTheChainDefinition(t *testing.T) {
	_, tag, _ := registerConsumerPlugins(t)
	var seen *api.Consumer
	byName := plugin(t, api.Needs{}, recvF{func(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		if n, ok := h.Get("x-service-said"); ok {
			ctx.SetConsumer(&api.Consumer{Name: n})
		}
		return api.Continue
	}})
	after := plugin(t, api.Needs{}, recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		seen = ctx.Consumer()
		return api.Continue
	}})
	cfg, err := parseMoe(t, `{"plugins": [{"name": "`+byName+`"}, {"name": "`+after+`"}, {"name": "`+tag+`"}],
		"consumers": [{"name": "alice", "group": "admins", "plugins": [{"name": "`+tag+`", "config": {"tag": "alice"}}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	res := do(t, cfg, fakeenvoy.Request{Headers: [][2]string{{"x-service-said", "alice"}}})
	if seen == nil || seen.Group != "admins" || res.Upstream.Headers["x-tag"][0] != "alice" {
		t.Fatalf("consumer %+v, x-tag %v", seen, res.Upstream.Headers["x-tag"])
	}
	do(t, cfg, fakeenvoy.Request{Headers: [][2]string{{"x-service-said", "mallory"}}})
	if seen == nil || seen.Name != "mallory" || seen.Group != "" {
		t.Fatalf("an undefined name: %+v", seen)
	}
}
