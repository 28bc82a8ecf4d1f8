package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/log"
	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/registry"
)

type env struct {
	plugin string
	route  bool
}

func (e env) PluginName() string   { return e.plugin }
func (e env) IsRoute() bool        { return e.route }
func (e env) Metrics() api.Metrics { return metrics.ForPlugin(e.plugin) }
func (e env) Log() api.Logger      { return log.Plugin(e.plugin) }

// NewEnv is the api.ConfigEnv given to a plugin config's Init.
func NewEnv(plugin string, isRoute bool) api.ConfigEnv { return env{plugin: plugin, route: isRoute} }

// DecodePlugin builds a plugin's config from raw JSON: defaults from NewConfig,
// strict decode, Validate, Init. Errors are *Error naming plugin and field.
func DecodePlugin(p *registry.Plugin, raw []byte, isRoute bool) (any, error) {
	return decodePlugin(p, raw, isRoute, true)
}

// CheckPlugin is DecodePlugin without Init: strict decode over the defaults,
// then Validate. It is for offline tools (moectl): Init may start goroutines
// or reach the network (JWKS fetchers, Redis clients), and the config is
// thrown away, so nothing needs destroying. Checks a plugin makes only in Init
// are not run.
func CheckPlugin(p *registry.Plugin, raw []byte, isRoute bool) error {
	_, err := decodePlugin(p, raw, isRoute, false)
	return err
}

func decodePlugin(p *registry.Plugin, raw []byte, isRoute, initialize bool) (any, error) {
	if p.NewConfig == nil {
		t := bytes.TrimSpace(raw)
		if isEmpty(t) || string(t) == "{}" {
			return nil, nil
		}
		return nil, &Error{Plugin: p.Name, Reason: "this plugin takes no config"}
	}
	cfg := p.NewConfig()
	if err := DecodeStrict(raw, cfg); err != nil {
		return nil, wrap(p.Name, "", err)
	}
	if v, ok := cfg.(api.Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, wrap(p.Name, "", err)
		}
	}
	if in, ok := cfg.(api.Initializer); ok && initialize {
		if err := in.Init(NewEnv(p.Name, isRoute)); err != nil {
			return nil, wrap(p.Name, "", err)
		}
	}
	return cfg, nil
}

// wrap turns any error into *Error, keeping the field path of an
// *api.FieldError (also when it is wrapped).
func wrap(plugin, prefix string, err error) error {
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	var fe *api.FieldError
	if errors.As(err, &fe) {
		return &Error{Plugin: plugin, Field: joinPath(prefix, fe.Field), Reason: fe.Reason}
	}
	return &Error{Plugin: plugin, Field: prefix, Reason: err.Error()}
}

// Entry is one plugin of a chain.
type Entry struct {
	Name   string
	Plugin *registry.Plugin
	// Config is the parsed config (nil for plugins without config).
	Config any
	// HasConfig is false for a per-route entry that only names the plugin
	// ("enable it here with the parent's config").
	HasConfig bool
	// Disabled entries are kept for ordering and re-enabling but do not run.
	Disabled bool
}

// Needs returns the entry's needs: the config's (api.NeedsProvider) or the
// plugin's registered ones.
func (e *Entry) Needs() api.Needs {
	if np, ok := e.Config.(api.NeedsProvider); ok {
		return np.Needs()
	}
	return e.Plugin.Needs
}

type rawList struct {
	Plugins []rawEntry `json:"plugins"`
}

type rawEntry struct {
	Name     string          `json:"name"`
	Config   json.RawMessage `json:"config"`
	Disabled bool            `json:"disabled"`
}

// ParseChain parses the moe filter config {"plugins":[{name, config, disabled}]}.
// At filter level every entry is decoded (a disabled one too, so a route can
// enable it with {name} alone). At route level an entry with "disabled: true"
// removes the plugin on that route and an entry without "config" keeps the
// parent's config.
//
// A chain is accepted or rejected as a whole: when an entry fails (or panics),
// the configs of the entries already initialised are destroyed
// (api.Destroyable), so their goroutines and connections do not outlive the
// rejected config.
func ParseChain(raw []byte, isRoute bool) ([]Entry, error) {
	return parseChain(raw, isRoute, true)
}

// CheckChain checks a moe plugin list like ParseChain (structure, plugin
// names, each entry's config with the same per-route rules) but runs each
// config through CheckPlugin: no Init, nothing to destroy. For offline tools.
func CheckChain(raw []byte, isRoute bool) error {
	_, err := parseChain(raw, isRoute, false)
	return err
}

func parseChain(raw []byte, isRoute, initialize bool) ([]Entry, error) {
	var l rawList
	if err := DecodeStrict(raw, &l); err != nil {
		return nil, wrap("", "", err)
	}
	seen := make(map[string]int, len(l.Plugins))
	out := make([]Entry, 0, len(l.Plugins))
	ok := false
	defer func() {
		if !ok && initialize { // an error return or a panic on the way up
			destroyConfigs(out)
		}
	}()
	for i, re := range l.Plugins {
		field := fmt.Sprintf("plugins[%d]", i)
		if re.Name == "" {
			return nil, &Error{Field: field + ".name", Reason: "missing plugin name"}
		}
		p, ok := registry.Get(re.Name)
		if !ok {
			return nil, &Error{Plugin: re.Name, Field: field + ".name", Reason: fmt.Sprintf("unknown plugin (registered: %v)", registry.Names())}
		}
		if j, dup := seen[re.Name]; dup {
			return nil, &Error{Plugin: re.Name, Field: field, Reason: fmt.Sprintf("listed twice (also plugins[%d])", j)}
		}
		seen[re.Name] = i
		e := Entry{Name: re.Name, Plugin: p, Disabled: re.Disabled}
		if len(re.Config) > 0 && !isEmpty(re.Config) {
			e.HasConfig = true
		}
		if isRoute && e.Disabled {
			if e.HasConfig {
				return nil, &Error{Plugin: re.Name, Field: field, Reason: "a disabled plugin takes no config"}
			}
		} else if e.HasConfig || !isRoute {
			cfg, err := decodePlugin(p, re.Config, isRoute, initialize)
			if err != nil {
				return nil, err
			}
			e.Config = cfg
			e.HasConfig = true
		}
		out = append(out, e)
	}
	ok = true
	return out, nil
}

// destroyConfigs releases the configs of entries nobody will own. A panic in
// one Destroy is swallowed: it must not skip the others nor replace the
// rejection being reported.
func destroyConfigs(es []Entry) {
	for _, e := range es {
		if d, ok := e.Config.(api.Destroyable); ok {
			func() {
				defer func() { _ = recover() }()
				d.Destroy()
			}()
		}
	}
}

// Merge applies a per-route plugin list over its parent (filter, virtual host
// or a less specific route level). Rules:
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
			cfg, err := DecodePlugin(r.Plugin, nil, true)
			if err != nil {
				return nil, err
			}
			r.Config, r.HasConfig = cfg, true
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
