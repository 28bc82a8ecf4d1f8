package config

import (
	"encoding/json"
	"fmt"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Entry is one plugin of a chain.
type Entry struct {
	Name   string
	Plugin *registry.Plugin
	// Config is the parsed config (nil for plugins without config).
	Config any
	// Hooks are the filter interfaces the plugin's filter implements, probed
	// when the config was parsed (0 when it was only checked, not initialised).
	Hooks registry.Hooks
	// HasConfig is false for a per-route entry that only names the plugin
	// ("enable it here with the parent's config").
	HasConfig bool
	// Disabled entries are kept for ordering and re-enabling but do not run.
	Disabled bool
}

// Needs returns the entry's needs: the config's (api.NeedsProvider) or the
// plugin's registered ones.
func (e *Entry) Needs() api.Needs { return needsOf(e.Plugin, e.Config) }

// ChainConfig is a parsed moe filter config.
type ChainConfig struct {
	Entries []Entry
	// Consumers are the chain-level consumers (filter level only; nil when
	// none are defined).
	Consumers *Consumers
}

type rawChain struct {
	Plugins   []rawEntry    `json:"plugins"`
	Consumers []rawConsumer `json:"consumers"`
}

type rawEntry struct {
	Name     string          `json:"name"`
	Config   json.RawMessage `json:"config"`
	Disabled bool            `json:"disabled"`
}

// ParseChain parses the moe filter config
//
//	{"plugins": [{name, config, disabled}], "consumers": [{name, group, attributes, auth, plugins}]}
//
// At filter level every entry is decoded (a disabled one too, so a route can
// enable it with {name} alone), and the consumers' credentials reach the auth
// plugins' Init (ConfigEnv.Consumers). At route level an entry with "disabled:
// true" removes the plugin on that route, an entry without "config" keeps the
// parent's config, and consumers may not be defined.
//
// A chain is accepted or rejected as a whole: when anything fails (or panics),
// the configs already initialised are destroyed (api.Destroyable), so their
// goroutines and connections do not outlive the rejected config.
func ParseChain(raw []byte, isRoute bool) (*ChainConfig, error) {
	return parseChain(raw, isRoute, true)
}

// CheckChain checks a moe config like ParseChain (structure, plugin names,
// each entry's config with the same per-route rules, consumers and their
// credentials and plugins) but runs each config through CheckPlugin: no Init,
// nothing to destroy. For offline tools.
func CheckChain(raw []byte, isRoute bool) error {
	_, err := parseChain(raw, isRoute, false)
	return err
}

// CheckChainFull is ParseChain in check-only mode (every plugin's Init runs
// with ConfigEnv.CheckOnly, starting nothing), the result destroyed: every
// check the framework and the plugins make, for offline tools.
func CheckChainFull(raw []byte, isRoute bool) error {
	cc, err := parseChainMode(raw, isRoute, true, true)
	if cc != nil {
		destroyConfigs(cc.Entries)
		cc.Consumers.Destroy()
	}
	return err
}

func parseChain(raw []byte, isRoute, initialize bool) (*ChainConfig, error) {
	return parseChainMode(raw, isRoute, initialize, false)
}

func parseChainMode(raw []byte, isRoute, initialize, checkOnly bool) (*ChainConfig, error) {
	var l rawChain
	if err := DecodeStrict(raw, &l); err != nil {
		return nil, wrap("", "", err)
	}
	if isRoute && len(l.Consumers) > 0 {
		return nil, &Error{Field: "consumers", Reason: "consumers are defined in the filter-level config, not per route (a route reconfigures or disables plugins; the consumers stay)"}
	}
	cc := &ChainConfig{}
	ok := false
	defer func() {
		if !ok && initialize { // an error return or a panic on the way up
			destroyConfigs(cc.Entries)
			cc.Consumers.Destroy()
		}
	}()
	plugins, err := resolve(l.Plugins, "plugins")
	if err != nil {
		return nil, err
	}
	if cc.Consumers, err = parseConsumers(l.Consumers, plugins, initialize); err != nil {
		return nil, err
	}
	for i, re := range l.Plugins {
		e, err := decodeEntry(re, plugins[i], fmt.Sprintf("plugins[%d]", i), "", env{plugin: re.Name, route: isRoute, consumers: cc.Consumers.forPlugin(re.Name), checkOnly: checkOnly}, initialize)
		if err != nil {
			return nil, err
		}
		cc.Entries = append(cc.Entries, e)
	}
	if err := cc.Consumers.parsePlugins(initialize, checkOnly); err != nil {
		return nil, err
	}
	ok = true
	return cc, nil
}

// resolve looks the plugins of a list up in the registry and refuses unnamed,
// unknown and repeated entries. field is the list's config path.
func resolve(list []rawEntry, field string) ([]*registry.Plugin, error) {
	seen := make(map[string]int, len(list))
	out := make([]*registry.Plugin, len(list))
	for i, re := range list {
		at := fmt.Sprintf("%s[%d]", field, i)
		if re.Name == "" {
			return nil, &Error{Field: at + ".name", Reason: "missing plugin name"}
		}
		p, ok := registry.Get(re.Name)
		if !ok {
			return nil, &Error{Plugin: re.Name, Field: at + ".name", Reason: fmt.Sprintf("unknown plugin (registered: %v)", registry.Names())}
		}
		if j, dup := seen[re.Name]; dup {
			return nil, &Error{Plugin: re.Name, Field: at, Reason: fmt.Sprintf("listed twice (also %s[%d])", field, j)}
		}
		seen[re.Name] = i
		out[i] = p
	}
	return out, nil
}

// decodeEntry decodes one list entry; e.route selects the per-route rules.
// field is the entry's path; errors inside the plugin's config name fields
// relative to the config, prefixed with configPath when it is not empty.
func decodeEntry(re rawEntry, p *registry.Plugin, field, configPath string, e env, initialize bool) (Entry, error) {
	out := Entry{Name: re.Name, Plugin: p, Disabled: re.Disabled}
	if len(re.Config) > 0 && !isEmpty(re.Config) {
		out.HasConfig = true
	}
	if e.route && out.Disabled {
		if out.HasConfig {
			return Entry{}, &Error{Plugin: re.Name, Field: field, Reason: "a disabled plugin takes no config"}
		}
		return out, nil
	}
	if !out.HasConfig && e.route {
		return out, nil // keeps the parent's config
	}
	cfg, hooks, err := decodePlugin(p, re.Config, e, initialize)
	if err != nil {
		if ce, ok := err.(*Error); ok && configPath != "" {
			err = &Error{Plugin: ce.Plugin, Field: joinPath(configPath, ce.Field), Reason: ce.Reason}
		}
		return Entry{}, err
	}
	out.Config, out.Hooks, out.HasConfig = cfg, hooks, true
	return out, nil
}

// Merge applies a per-route plugin list over its parent (filter, virtual host
// or a less specific route level), or a consumer's own plugins over the chain
// of the route a request took. Rules:
//   - a plugin in both: the route's config wins (or Plugin.Merge decides);
//     "disabled: true" disables it; an entry without config re-enables it with
//     the parent's config;
//   - the parent's order is kept;
//   - a plugin only the route lists is inserted right after the closest plugin
//     listed before it in the route's list; if none, right before the closest
//     one listed after it that the chain already has; if the route lists no
//     known neighbour, it is appended. So a route can place a plugin by naming a
//     neighbour: [{name: auth}, {name: my-limit, config: ...}] puts my-limit
//     right after auth.
//
// Decode-order placement by phase (BeforeRoute first) is applied afterwards,
// when the chain is built.
func Merge(parent, route []Entry) ([]Entry, error) {
	out := make([]Entry, len(parent), len(parent)+len(route))
	copy(out, parent)
	index := func(name string) int {
		for i := range out {
			if out[i].Name == name {
				return i
			}
		}
		return -1
	}
	for j, r := range route {
		if i := index(r.Name); i >= 0 {
			switch {
			case r.Disabled:
				out[i].Disabled = true
			case r.HasConfig:
				merged := r
				if p := r.Plugin; p.Merge != nil && out[i].HasConfig {
					merged.Config = p.Merge(out[i].Config, r.Config)
				}
				out[i] = merged
			default:
				out[i].Disabled = false
			}
			continue
		}
		if r.Disabled {
			continue // nothing to disable
		}
		if !r.HasConfig {
			cfg, hooks, err := decodePlugin(r.Plugin, nil, env{plugin: r.Name, route: true}, true)
			if err != nil {
				return nil, err
			}
			r.Config, r.Hooks, r.HasConfig = cfg, hooks, true
		}
		pos := len(out)
		found := false
		for k := j - 1; k >= 0 && !found; k-- {
			if i := index(route[k].Name); i >= 0 {
				pos, found = i+1, true
			}
		}
		for k := j + 1; k < len(route) && !found; k++ {
			if i := index(route[k].Name); i >= 0 {
				pos, found = i, true
			}
		}
		out = append(out, Entry{})
		copy(out[pos+1:], out[pos:])
		out[pos] = r
	}
	return out, nil
}
