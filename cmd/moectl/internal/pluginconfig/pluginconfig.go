// Package pluginconfig validates the plugin configs of moe's golang filters with the
// framework's own registry and decoder, offline. It is what moectl installs as
// plugincheck.Validate (for `moectl compile`), and what `moectl validate` calls through Check.
//
// It links every plugin of the bundle (plugins/all) but none of Envoy's cgo SDK: plugins
// import only shared/api and helpers, and shared/config decodes without Envoy.
//
// Two depths:
//   - Decode (Validate, for compile; Check with full=false): strict decoding over the
//     defaults and each config's Validate(), as config.CheckChain/CheckPlugin do. No Init.
//   - Full (Check with full=true): the framework's whole parse, Init included, as Envoy's
//     load runs it, in check-only mode (config.CheckChainFull/CheckPluginFull: Init sees
//     api.ConfigEnv.CheckOnly, makes every check it makes for real, and starts no goroutine,
//     opens no connection, listener or file for writing, creates nothing and registers
//     nothing process-wide); each config is destroyed right after. It runs in moectl's own
//     process.
package pluginconfig

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	envoyapi "github.com/envoyproxy/envoy/contrib/golang/common/go/api"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/moeproxy/moe/cmd/moectl/internal/plugincheck"
	_ "github.com/moeproxy/moe/plugins/all" // registers the bundle's plugins
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/registry"
)

// LibraryID is the library_id of the moe bundle (libgolang.so). Golang filters of other
// libraries (test libraries, other Go filters) carry plugins moectl does not know: their
// configs are not checked.
const LibraryID = "moe"

// ChainPlugin is the plugin_name of the filter running a plugin chain (shared/envoy).
const ChainPlugin = "moe"

// Outside Envoy the SDK's logger has no C side and panics; config code that logs (a JWKS
// refresher, sentinel's logger) would take moectl down. Lines go nowhere: moectl reports
// rejections, not log output.
func init() { envoyapi.SetCommonCAPI(quietLog{}) }

type quietLog struct{}

func (quietLog) Log(envoyapi.LogType, string) {}
func (quietLog) LogLevel() envoyapi.LogType   { return envoyapi.Critical }

// Validate checks one plugin_config or per-route config (decode depth, first problem only):
// the hook of `moectl compile`. plugin_name "moe" takes a plugin list ({plugins: [...]});
// any other plugin_name must be a registered plugin, whose config the TypedStruct is. A
// per-route config is checked on its own, as Envoy parses it before merging: entries that
// only name or disable a plugin have nothing to check.
func Validate(tg plugincheck.Target) (err error) {
	if tg.LibraryID != LibraryID {
		return nil
	}
	// Plugin config code runs here outside Envoy: a panic is a finding, not a crash of moectl.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("checking the config of plugin_name %q panicked: %v", tg.PluginName, r)
		}
	}()
	raw, err := config.AnyToJSON(tg.Config)
	if err != nil {
		return err
	}
	if tg.PluginName == ChainPlugin {
		return config.CheckChain(raw, tg.PerRoute)
	}
	p, ok := registry.Get(tg.PluginName)
	if !ok {
		return unknownPluginName(tg.PluginName)
	}
	return config.CheckPlugin(p, raw, tg.PerRoute)
}

func unknownPluginName(name string) error {
	// Envoy's Go SDK would silently run an unknown plugin_name as a pass-through filter.
	return fmt.Errorf("unknown plugin_name %q for library_id %q; the bundle has %v", name, LibraryID,
		append([]string{ChainPlugin}, registry.Names()...))
}

// Target is one plugin config to check.
type Target struct {
	LibraryID  string
	PluginName string
	PerRoute   bool
	Config     *anypb.Any
}

// Problem is one rejection. Field is a path inside the TypedStruct's value (for a chain,
// from its root: "plugins[1].config.keys[0].secret", "consumers[0].auth.key-auth.keys[0]");
// empty when the problem is about the config as a whole.
type Problem struct {
	Plugin string `json:"plugin,omitempty"`
	// Field is the framework's field path (relative to the plugin's config for a plugin's own
	// fields, as in Message).
	Field   string `json:"field,omitempty"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// At is where the problem is inside the TypedStruct's value: for a chain from its root
	// ("plugins[1].config.keys[0].secret"), for a single plugin the config's field path.
	At string `json:"at,omitempty"`
}

// Check returns every problem of one target. full runs Init in check-only mode (the
// framework's whole parse); otherwise decode and Validate only.
func Check(tg Target, full bool) []Problem {
	if tg.LibraryID != LibraryID {
		return nil
	}
	var raw []byte
	var err error
	if prob := guard(tg.PluginName, func() error { raw, err = config.AnyToJSON(tg.Config); return err }); prob != nil {
		return []Problem{*prob}
	}
	if tg.PluginName != ChainPlugin {
		p, ok := registry.Get(tg.PluginName)
		if !ok {
			e := unknownPluginName(tg.PluginName)
			return []Problem{{Reason: e.Error(), Message: e.Error()}}
		}
		if prob := guard(p.Name, func() error { return parsePlugin(p, raw, tg.PerRoute, full) }); prob != nil {
			prob.At = prob.Field
			return []Problem{*prob}
		}
		return nil
	}
	return checkChain(raw, tg.PerRoute, full)
}

var chainLevelConsumer = regexp.MustCompile(`^consumers\[\d+\]\.(auth|plugins)([.\[]|$)`)

// locate sets p.At: the framework names a plugin's own fields relative to its config, and
// chain-level fields (plugins[i], consumers[j]) from the root.
func (c *chain) locate(p *Problem) {
	p.At = p.Field
	i := indexOf(c.names, p.Plugin)
	if p.Plugin == "" || i < 0 || strings.HasPrefix(p.Field, "plugins[") {
		return
	}
	// "consumers" alone is the plugin's own list (a chain-level consumer problem names its
	// element); consumers[j] is the chain's unless the plugin has a list of its own.
	if strings.HasPrefix(p.Field, "consumers[") {
		var cfg map[string]json.RawMessage
		_ = json.Unmarshal(c.plugins[i]["config"], &cfg)
		if _, own := cfg["consumers"]; chainLevelConsumer.MatchString(p.Field) || !own {
			return // a chain-level consumer
		}
	}
	// Without a config in the YAML, the path ends at the entry when it is located.
	base := fmt.Sprintf("plugins[%d].config", i)
	switch {
	case p.Field == "":
		p.At = base
	case strings.HasPrefix(p.Field, "["):
		p.At = base + p.Field
	default:
		p.At = base + "." + p.Field
	}
}

// guard runs fn, turning its error or panic into a Problem.
func guard(plugin string, fn func() error) (p *Problem) {
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("checking the config of plugin %q panicked: %v", plugin, r)
			p = &Problem{Plugin: plugin, Reason: msg, Message: msg}
		}
	}()
	if err := fn(); err != nil {
		return problemOf(err)
	}
	return nil
}

func problemOf(err error) *Problem {
	if ce, ok := err.(*config.Error); ok {
		return &Problem{Plugin: ce.Plugin, Field: ce.Field, Reason: ce.Reason, Message: ce.Error()}
	}
	return &Problem{Reason: err.Error(), Message: err.Error()}
}

// parsePlugin is one plugin used as its own golang filter.
func parsePlugin(p *registry.Plugin, raw []byte, isRoute, full bool) error {
	if !full {
		return config.CheckPlugin(p, raw, isRoute)
	}
	return config.CheckPluginFull(p, raw, isRoute)
}

// parseChain is a moe config.
func parseChain(raw []byte, isRoute, full bool) error {
	if !full {
		return config.CheckChain(raw, isRoute)
	}
	return config.CheckChainFull(raw, isRoute)
}

type rawEntry = map[string]json.RawMessage

// chain is a moe config split into its parts, to check them one by one: the framework
// stops at the first problem of a config, moectl wants them all.
type chain struct {
	plugins   []rawEntry
	names     []string // plugins[i].name
	consumers []rawEntry
}

func (c *chain) json(plugins, consumers []rawEntry) []byte {
	m := map[string]any{"plugins": plugins}
	if plugins == nil {
		m["plugins"] = []rawEntry{}
	}
	if consumers != nil {
		m["consumers"] = consumers
	}
	b, _ := json.Marshal(m)
	return b
}

// checkChain finds the problems of a moe config: first the framework's verdict on the whole
// config (what Envoy would report), then each part on its own, so one broken plugin does
// not hide the next. Parts: every plugin entry (with the chain's consumers that carry a
// credential for it), every consumer's name and credentials, every consumer's own plugins.
func checkChain(raw []byte, isRoute, full bool) []Problem {
	var out problems
	// run checks one config and reports whether it has a problem.
	run := func(js []byte, remap func(string) string) bool {
		p := guard(ChainPlugin, func() error { return parseChain(js, isRoute, full) })
		if p == nil {
			return false
		}
		if remap != nil {
			p.Field = remap(p.Field)
			p.Message = (&config.Error{Plugin: p.Plugin, Field: p.Field, Reason: p.Reason}).Error()
		}
		out.add(*p)
		return true
	}
	run(raw, nil)
	c, ok := split(raw)
	if !ok {
		for i := range out.list {
			out.list[i].At = out.list[i].Field
		}
		return out.list // the structure itself is wrong: the framework's message says how
	}

	specOK := make([]bool, len(c.consumers))
	type credKey struct {
		consumer int
		plugin   string
	}
	credOK := map[credKey]bool{} // the credential decodes and validates
	for j, cons := range c.consumers {
		at := func(f string) string { return renumber(f, "consumers", 0, j) }
		specOK[j] = !run(c.json(nil, []rawEntry{specOf(cons)}), at)
		for _, name := range authNames(cons) {
			var plugins []rawEntry
			if i := indexOf(c.names, name); i >= 0 {
				plugins = []rawEntry{{"name": c.plugins[i]["name"], "disabled": json.RawMessage("true")}}
			}
			one := specOf(cons)
			one["auth"] = mustJSON(map[string]json.RawMessage{name: authOf(cons)[name]})
			// Only the credential's problems count here: the entry's own config is the next part.
			ok := true
			if p := guard(ChainPlugin, func() error { return config.CheckChain(c.json(plugins, []rawEntry{one}), false) }); p != nil &&
				strings.HasPrefix(p.Field, "consumers[0].") {
				p.Field = at(p.Field)
				p.Message = (&config.Error{Plugin: p.Plugin, Field: p.Field, Reason: p.Reason}).Error()
				out.add(*p)
				ok = false
			}
			credOK[credKey{j, name}] = ok
		}
	}
	for i, e := range c.plugins {
		var cons []rawEntry
		for j, cr := range c.consumers {
			one := specOf(cr)
			if !specOK[j] {
				one = rawEntry{"name": mustJSON(fmt.Sprintf("moectl-consumer-%d", j))}
			}
			if cred, has := authOf(cr)[c.names[i]]; has && credOK[credKey{j, c.names[i]}] {
				one["auth"] = mustJSON(map[string]json.RawMessage{c.names[i]: cred})
			}
			cons = append(cons, one)
		}
		if isRoute {
			cons = nil
		}
		run(c.json([]rawEntry{e}, cons), func(f string) string { return renumber(f, "plugins", 0, i) })
	}
	if !isRoute {
		for j, cr := range c.consumers {
			own, has := cr["plugins"]
			if !has {
				continue
			}
			one := specOf(cr)
			if !specOK[j] {
				one = rawEntry{"name": mustJSON(fmt.Sprintf("moectl-consumer-%d", j))}
			}
			one["plugins"] = own
			run(c.json(nil, []rawEntry{one}), func(f string) string { return renumber(f, "consumers", 0, j) })
		}
	}
	for i := range out.list {
		c.locate(&out.list[i])
	}
	return out.list
}

// split reads the parts of a chain config; false when its shape is not {plugins, consumers}
// with named entries (the whole-config check has reported that).
func split(raw []byte) (*chain, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil, false
	}
	c := &chain{}
	for k, v := range top {
		switch k {
		case "plugins":
			if json.Unmarshal(v, &c.plugins) != nil {
				return nil, false
			}
		case "consumers":
			if json.Unmarshal(v, &c.consumers) != nil {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	for _, e := range c.plugins {
		var name string
		if json.Unmarshal(e["name"], &name) != nil {
			return nil, false
		}
		c.names = append(c.names, name)
	}
	return c, true
}

// specOf is a consumer without its credentials and plugins.
func specOf(cons rawEntry) rawEntry {
	out := rawEntry{}
	for k, v := range cons {
		if k != "auth" && k != "plugins" {
			out[k] = v
		}
	}
	return out
}

func authOf(cons rawEntry) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(cons["auth"], &m)
	return m
}

func authNames(cons rawEntry) []string {
	m := authOf(cons)
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// renumber rewrites the index of a list field in a problem's path: a part checked alone is
// element 0 of its list, the user wrote it as element n.
func renumber(field, list string, from, to int) string {
	old := fmt.Sprintf("%s[%d]", list, from)
	if field == old || strings.HasPrefix(field, old+".") || strings.HasPrefix(field, old+"[") {
		return fmt.Sprintf("%s[%d]", list, to) + field[len(old):]
	}
	return field
}

// problems keeps the first of equal problems, in order.
type problems struct {
	list []Problem
	seen map[string]bool
}

func (ps *problems) add(p Problem) {
	if ps.seen == nil {
		ps.seen = map[string]bool{}
	}
	k := p.Plugin + "\x00" + p.Field + "\x00" + p.Reason
	if ps.seen[k] {
		return
	}
	ps.seen[k] = true
	ps.list = append(ps.list, p)
}

// Known reports whether name is a plugin_name of the moe library: the chain or a
// registered plugin.
func Known(name string) bool {
	if name == ChainPlugin {
		return true
	}
	_, ok := registry.Get(name)
	return ok
}
