// Package envoy is the only place that registers moe with Envoy's Go SDK. It
// registers the "moe" filter (the plugin chain) and, for every registered
// plugin, a golang filter of the plugin's own name, for users who prefer one
// golang filter per plugin. Blank-import it from the main package of the .so.
package envoy

import (
	"github.com/envoyproxy/envoy/contrib/golang/filters/http/source/go/pkg/http"

	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/registry"
)

// FilterName is the plugin_name of the chain filter.
const FilterName = "moe"

func init() {
	http.RegisterHttpFilterFactoryAndConfigParser(FilterName, filtermanager.Factory, filtermanager.Parser{})
	// OnRegister also sees plugins whose packages initialise after this one.
	registry.OnRegister(func(p *registry.Plugin) {
		http.RegisterHttpFilterFactoryAndConfigParser(p.Name, filtermanager.Factory, filtermanager.PluginParser{Plugin: p})
	})
}
