package config

import (
	"bytes"
	"errors"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/log"
	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/registry"
)

type env struct {
	plugin    string
	route     bool
	consumers []api.ConsumerCredential
	checkOnly bool
}

func (e env) PluginName() string                  { return e.plugin }
func (e env) IsRoute() bool                       { return e.route }
func (e env) Metrics() api.Metrics                { return metrics.ForPlugin(e.plugin) }
func (e env) Log() api.Logger                     { return log.Plugin(e.plugin) }
func (e env) Consumers() []api.ConsumerCredential { return e.consumers }
func (e env) CheckOnly() bool                     { return e.checkOnly }

// NewEnv is the api.ConfigEnv given to a plugin config's Init (without
// chain-level consumers).
func NewEnv(plugin string, isRoute bool) api.ConfigEnv { return env{plugin: plugin, route: isRoute} }

// DecodePlugin builds a plugin's config from raw JSON: defaults from NewConfig,
// strict decode, Validate, Init, and the plugin contract check on the filter it
// builds (registry.Probe). Errors are *Error naming plugin and field.
func DecodePlugin(p *registry.Plugin, raw []byte, isRoute bool) (any, error) {
	cfg, _, err := decodePlugin(p, raw, env{plugin: p.Name, route: isRoute}, true)
	return cfg, err
}

// DecodeEntry is DecodePlugin returning the chain entry of a plugin used as
// its own golang filter (with the hooks its filter implements).
func DecodeEntry(p *registry.Plugin, raw []byte, isRoute bool) (Entry, error) {
	cfg, hooks, err := decodePlugin(p, raw, env{plugin: p.Name, route: isRoute}, true)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Name: p.Name, Plugin: p, Config: cfg, Hooks: hooks, HasConfig: true}, nil
}

// CheckPluginFull checks a plugin's config the way the framework parses it,
// Init included, in check-only mode (ConfigEnv.CheckOnly: Init starts
// nothing), and destroys the result: every check a plugin makes, for offline
// tools.
func CheckPluginFull(p *registry.Plugin, raw []byte, isRoute bool) error {
	cfg, _, err := decodePlugin(p, raw, env{plugin: p.Name, route: isRoute, checkOnly: true}, true)
	destroyConfig(cfg)
	return err
}

// CheckPlugin is DecodePlugin without Init: strict decode over the defaults,
// then Validate. It is for offline tools (moectl): Init may start goroutines
// or reach the network (JWKS fetchers, Redis clients), and the config is
// thrown away, so nothing needs destroying. Checks a plugin makes only in Init
// are not run.
func CheckPlugin(p *registry.Plugin, raw []byte, isRoute bool) error {
	_, _, err := decodePlugin(p, raw, env{plugin: p.Name, route: isRoute}, false)
	return err
}

func decodePlugin(p *registry.Plugin, raw []byte, e env, initialize bool) (any, registry.Hooks, error) {
	if p.NewConfig == nil {
		t := bytes.TrimSpace(raw)
		if !isEmpty(t) && string(t) != "{}" {
			return nil, 0, &Error{Plugin: p.Name, Reason: "this plugin takes no config"}
		}
		if !initialize {
			return nil, 0, nil
		}
		h, err := registry.Probe(p, nil, p.Needs)
		if err != nil {
			return nil, 0, &Error{Plugin: p.Name, Reason: err.Error()}
		}
		return nil, h, nil
	}
	cfg := p.NewConfig()
	if err := DecodeStrict(raw, cfg); err != nil {
		return nil, 0, wrap(p.Name, "", err)
	}
	if v, ok := cfg.(api.Validator); ok {
		if err := v.Validate(); err != nil {
			return nil, 0, wrap(p.Name, "", err)
		}
	}
	if !initialize {
		return cfg, 0, nil
	}
	if in, ok := cfg.(api.Initializer); ok {
		if err := in.Init(e); err != nil {
			return nil, 0, wrap(p.Name, "", err)
		}
	}
	h, err := registry.Probe(p, cfg, needsOf(p, cfg))
	if err != nil {
		destroyConfig(cfg)
		return nil, 0, &Error{Plugin: p.Name, Reason: err.Error()}
	}
	return cfg, h, nil
}

func needsOf(p *registry.Plugin, cfg any) api.Needs {
	if np, ok := cfg.(api.NeedsProvider); ok {
		return np.Needs()
	}
	return p.Needs
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

// destroyConfigs releases the configs of entries nobody will own.
func destroyConfigs(es []Entry) {
	for _, e := range es {
		destroyConfig(e.Config)
	}
}

// destroyConfig releases one config. A panic in Destroy is swallowed: it must
// not skip the others nor replace the rejection being reported.
func destroyConfig(cfg any) {
	if d, ok := cfg.(api.Destroyable); ok {
		func() {
			defer func() { _ = recover() }()
			d.Destroy()
		}()
	}
}
