// Package plugincheck is the hook through which moectl validates what is inside a golang
// filter's plugin_config (and each per-route config) with the plugin registry of the moe
// framework. moectl's main sets Validate to pluginconfig.Validate; the compile package only
// knows this hook, so its tests run without the plugins.
package plugincheck

import "google.golang.org/protobuf/types/known/anypb"

// Target is one plugin config found in the bootstrap.
type Target struct {
	// Path is the YAML path of the Any, for the caller's error messages.
	Path string
	// LibraryID and PluginName identify the golang filter the config is for.
	LibraryID  string
	PluginName string
	// PerRoute is true for a ConfigsPerRoute entry (merged over the filter-level config).
	PerRoute bool
	// Config is the Any exactly as Envoy passes it to Go; never nil.
	Config *anypb.Any
}

// Validate, when set, is called for every plugin config; a non-nil error is reported under
// Target.Path. It is nil by default: configs are then passed through unchecked.
var Validate func(Target) error
