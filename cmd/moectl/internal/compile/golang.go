package compile

import (
	"errors"
	"fmt"
	"io/fs"

	golangv3alpha "github.com/envoyproxy/go-control-plane/contrib/envoy/extensions/filters/http/golang/v3alpha"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/plugincheck"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

func (c *compiler) golang(p ypath.Path, cfg *golangv3alpha.Config) *bootstrap.GolangFilter {
	c.only(p, cfg, "library_id", "library_path", "plugin_name", "plugin_config", "generic_secrets")
	out := &bootstrap.GolangFilter{
		LibraryID:    cfg.GetLibraryId(),
		LibraryPath:  cfg.GetLibraryPath(),
		PluginName:   cfg.GetPluginName(),
		PluginConfig: c.anyBase64(p.Field("plugin_config"), cfg.GetPluginConfig()),
		Secrets:      map[string]string{},
	}
	if !c.opts.SkipLibraryCheck && cfg.GetLibraryPath() != "" {
		if err := c.statLibrary(cfg.GetLibraryPath()); err != nil {
			c.errs.Addf(p.Field("library_path"), "%s", libraryProblem(cfg.GetLibraryPath(), err))
		}
	}
	if pc := cfg.GetPluginConfig(); pc != nil {
		c.checkPlugin(p.Field("plugin_config"), out, cfg.GetPluginName(), false, pc)
	}
	for i, s := range cfg.GetGenericSecrets() {
		sp := p.Field("generic_secrets").Index(i)
		// sds_config is refused: secrets come only from static_resources.secrets.
		c.only(sp, s, "name")
		v, ok := c.secrets[s.GetName()]
		if !ok {
			c.errs.Addf(sp.Field("name"), "secret %q is not a generic_secret in static_resources.secrets", s.GetName())
			continue
		}
		out.Secrets[s.GetName()] = base64Std(v)
	}
	return out
}

// perFilterConfig compiles a typed_per_filter_config map. Keys must name an http filter of the
// enclosing connection manager; golang filters take ConfigsPerRoute.
func (c *compiler) perFilterConfig(p ypath.Path, m map[string]*anypb.Any, filters map[string]bootstrap.HTTPFilter) bootstrap.PerFilterConfig {
	out := bootstrap.PerFilterConfig{}
	for _, name := range sortedKeys(m) {
		kp := p.Key(name)
		f, ok := filters[name]
		if filters == nil {
			// An RDS route table: the key names a filter of whichever connection manager uses
			// the table; the config's type decides (ConfigsPerRoute: the golang filter).
			f, ok = bootstrap.HTTPFilter{Name: name, Type: bootstrap.FilterGolang}, true
		}
		if !ok {
			c.errs.Addf(kp, "names no http filter of this http_connection_manager")
			continue
		}
		if f.Type != bootstrap.FilterGolang {
			c.errs.Addf(kp, "the %s filter takes no per-route config in moe-host", f.Type)
			continue
		}
		msg, ok := c.unpack(kp, m[name])
		if !ok {
			continue
		}
		cpr, ok := msg.(*golangv3alpha.ConfigsPerRoute)
		if !ok {
			c.errs.Addf(kp, "must be a envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute, got %s", m[name].GetTypeUrl())
			continue
		}
		c.only(kp, cpr, "plugins_config")
		plugins := map[string]bootstrap.RoutePluginConfig{}
		for _, pn := range sortedKeys(cpr.GetPluginsConfig()) {
			rp := kp.Field("plugins_config").Key(pn)
			rpc := cpr.GetPluginsConfig()[pn]
			c.only(rp, rpc, "disabled", "config")
			entry := bootstrap.RoutePluginConfig{Disabled: rpc.GetDisabled()}
			if cfg := rpc.GetConfig(); cfg != nil {
				s := c.anyBase64(rp.Field("config"), cfg)
				entry.Config = &s
				g := f.Golang
				if g == nil {
					g = &bootstrap.GolangFilter{LibraryID: "moe", PluginName: pn}
				}
				c.checkPlugin(rp.Field("config"), g, pn, true, cfg)
			}
			if f.Golang != nil && pn != f.Golang.PluginName {
				// Envoy accepts this, but the filter only ever reads its own plugin_name.
				c.warnf(rp, "filter %q has plugin_name %q; this entry is never used", name, f.Golang.PluginName)
			}
			plugins[pn] = entry
		}
		out[name] = plugins
	}
	return out
}

// checkPlugin hands a plugin config to the optional framework validator.
func (c *compiler) checkPlugin(p ypath.Path, f *bootstrap.GolangFilter, plugin string, perRoute bool, cfg *anypb.Any) {
	if plugincheck.Validate == nil || c.opts.SkipPluginCheck {
		return
	}
	err := plugincheck.Validate(plugincheck.Target{
		Path: p.String(), LibraryID: f.LibraryID, PluginName: plugin, PerRoute: perRoute, Config: cfg,
	})
	if err != nil {
		// The validator's message names the plugin (and field) itself.
		c.errs.Addf(p, "%v", err)
	}
}

func libraryProblem(path string, err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		// Say how Envoy resolves it: a relative path surprises people run from another directory.
		return fmt.Sprintf("library %s does not exist (relative paths are resolved against the working directory, as in Envoy)", path)
	}
	return fmt.Sprintf("library %s: %v", path, err)
}
