package config

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
	"github.com/moeproxy/moe/shared/registry"
)

// Consumers are the chain-level consumers of a moe config: defined once, next
// to the plugin list, each with a credential per auth plugin and optionally
// plugins of its own. A nil *Consumers is an empty list.
type Consumers struct {
	defs []*ConsumerDef
	// byPlugin holds, per auth plugin, the consumers carrying a credential
	// for it, in config order (what that plugin's ConfigEnv.Consumers returns).
	byPlugin map[string][]api.ConsumerCredential
}

// ConsumerDef is one chain-level consumer.
type ConsumerDef struct {
	// Consumer is the value auth plugins hand to ctx.SetConsumer; all plugins
	// of the chain share the pointer.
	Consumer *api.Consumer
	Field    string // "consumers[i]"
	// Plugins are the consumer's own plugin entries, with per-route semantics:
	// merged over the chain of the route a request took, once the consumer is
	// identified (nil when it has none).
	Plugins []Entry

	rawPlugins []rawEntry
}

type rawConsumer struct {
	consumer.Spec
	// Auth maps an auth plugin's name to this consumer's credential for it.
	Auth map[string]json.RawMessage `json:"auth"`
	// Plugins run for this consumer's requests after it is identified.
	Plugins []rawEntry `json:"plugins"`
}

// WithPlugins lists the consumers that have plugins of their own.
func (cs *Consumers) WithPlugins() []*ConsumerDef {
	if cs == nil {
		return nil
	}
	var out []*ConsumerDef
	for _, d := range cs.defs {
		if len(d.Plugins) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// ByName maps the consumers' names to their definitions (nil when none).
func (cs *Consumers) ByName() map[string]*api.Consumer {
	if cs == nil || len(cs.defs) == 0 {
		return nil
	}
	m := make(map[string]*api.Consumer, len(cs.defs))
	for _, d := range cs.defs {
		m[d.Consumer.Name] = d.Consumer
	}
	return m
}

// Len is the number of consumers.
func (cs *Consumers) Len() int {
	if cs == nil {
		return 0
	}
	return len(cs.defs)
}

func (cs *Consumers) forPlugin(name string) []api.ConsumerCredential {
	if cs == nil {
		return nil
	}
	return cs.byPlugin[name]
}

// Destroy releases the configs of the consumers' plugins.
func (cs *Consumers) Destroy() {
	if cs == nil {
		return
	}
	for _, d := range cs.defs {
		destroyConfigs(d.Plugins)
	}
}

// parseConsumers checks the consumer list and decodes every credential into
// its plugin's credential type. chain is the filter-level plugin list: a
// credential for a plugin it does not have would never be read, so it is an
// error (list an auth plugin that only some routes use with disabled: true).
func parseConsumers(list []rawConsumer, chain []*registry.Plugin, initialize bool) (*Consumers, error) {
	if len(list) == 0 {
		return nil, nil
	}
	inChain := make(map[string]bool, len(chain))
	for _, p := range chain {
		inChain[p.Name] = true
	}
	cs := &Consumers{byPlugin: map[string][]api.ConsumerCredential{}}
	names := consumer.Names{}
	for i := range list {
		rc := &list[i]
		field := fmt.Sprintf("consumers[%d]", i)
		if err := names.Add(field, &rc.Spec); err != nil {
			return nil, wrap("", "", err)
		}
		d := &ConsumerDef{Consumer: rc.Spec.Consumer(), Field: field, rawPlugins: rc.Plugins}
		plugins := make([]string, 0, len(rc.Auth))
		for name := range rc.Auth {
			plugins = append(plugins, name)
		}
		sort.Strings(plugins) // errors and ConfigEnv.Consumers in a stable order
		for _, name := range plugins {
			at := field + ".auth." + name
			p, ok := registry.Get(name)
			switch {
			case !ok:
				return nil, &Error{Plugin: name, Field: at, Reason: fmt.Sprintf("unknown plugin (registered: %v)", registry.Names())}
			case p.NewCredential == nil:
				return nil, &Error{Plugin: name, Field: at, Reason: "this plugin takes no consumer credentials"}
			case !inChain[name]:
				return nil, &Error{Plugin: name, Field: at, Reason: "the plugin is not in this filter's plugin list (list it, with disabled: true if only some routes enable it)"}
			}
			cred := p.NewCredential()
			if err := DecodeStrict(rc.Auth[name], cred); err != nil {
				return nil, wrap(name, at, err)
			}
			if v, ok := cred.(api.Validator); ok {
				if err := v.Validate(); err != nil {
					return nil, wrap(name, at, err)
				}
			}
			cs.byPlugin[name] = append(cs.byPlugin[name], api.ConsumerCredential{Consumer: d.Consumer, Credential: cred, Field: at})
		}
		cs.defs = append(cs.defs, d)
	}
	_ = initialize // credentials have no Init; the plugins' Init indexes them
	return cs, nil
}

// parsePlugins decodes each consumer's own plugins, with per-route rules. An
// auth plugin cannot be one (it would have to run before the consumer it
// identifies is known), nor can a BeforeRoute plugin (the route is chosen
// before the consumer is known).
func (cs *Consumers) parsePlugins(initialize, checkOnly bool) error {
	if cs == nil {
		return nil
	}
	for _, d := range cs.defs {
		field := d.Field + ".plugins"
		plugins, err := resolve(d.rawPlugins, field)
		if err != nil {
			return err
		}
		for j, re := range d.rawPlugins {
			at := fmt.Sprintf("%s[%d]", field, j)
			p := plugins[j]
			if p.NewCredential != nil {
				return &Error{Plugin: re.Name, Field: at, Reason: "an auth plugin cannot be a per-consumer plugin: it runs before the consumer is known"}
			}
			e, err := decodeEntry(re, p, at, at+".config", env{plugin: re.Name, route: true, checkOnly: checkOnly}, initialize)
			if err != nil {
				return err
			}
			if !e.Disabled && e.HasConfig && e.Needs().Phase == api.BeforeRoute {
				destroyConfig(e.Config)
				return &Error{Plugin: re.Name, Field: at, Reason: "a BeforeRoute plugin cannot be a per-consumer plugin: the route is chosen before the consumer is known"}
			}
			d.Plugins = append(d.Plugins, e)
		}
	}
	return nil
}
