// Package pluginconfig validates the plugin configs of moe's golang filters with the
// framework's own registry and decoder, offline. It is what moectl installs as
// plugincheck.Validate.
//
// It links every plugin of the bundle (plugins/all) but none of Envoy's cgo SDK: plugins
// import only shared/api and helpers, and shared/config decodes without Envoy. Configs are
// decoded strictly and Validate()d, never Init()ed: Init may start goroutines or reach the
// network (JWKS fetchers, Redis clients), which an offline check must not do.
package pluginconfig

import (
	"fmt"

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

// Validate checks one plugin_config or per-route config. plugin_name "moe" takes a plugin
// list ({plugins: [...]}); any other plugin_name must be a registered plugin, whose config
// the TypedStruct is. A per-route config is checked on its own, as Envoy parses it before
// merging: entries that only name or disable a plugin have nothing to check.
func Validate(tg plugincheck.Target) (err error) {
	if tg.LibraryID != LibraryID {
		return nil
	}
	// Plugin config code runs here outside Envoy: a panic (e.g. a Validate that logs through
	// Envoy's logger) is a finding, not a crash of moectl.
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
		// Envoy's Go SDK would silently run an unknown plugin_name as a pass-through filter.
		return fmt.Errorf("unknown plugin_name %q for library_id %q; the bundle has %v", tg.PluginName, LibraryID,
			append([]string{ChainPlugin}, registry.Names()...))
	}
	return config.CheckPlugin(p, raw, tg.PerRoute)
}
