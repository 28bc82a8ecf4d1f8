package api

import (
	"encoding/json"
	"fmt"
	"time"
)

// Config conventions (see shared/config for the decoder).
//
// A plugin config is a Go struct with json tags. NewConfig returns it with
// defaults filled in; the framework decodes the TypedStruct over it strictly
// (unknown fields and wrong types are errors), then calls, if implemented:
//
//	Validate() error            // reject bad values; return FieldErrorf(...) to name the field
//	Init(env ConfigEnv) error   // compile templates, index consumers, define metrics
//
// Both run once per config version, never per request.

// Validator is implemented by configs that check their values.
type Validator interface {
	Validate() error
}

// Initializer is implemented by configs that precompute things after
// validation.
type Initializer interface {
	Init(env ConfigEnv) error
}

// Destroyable configs release resources (goroutines, connections) when Envoy
// drops the config version.
type Destroyable interface {
	Destroy()
}

// ConfigEnv is what Init gets.
type ConfigEnv interface {
	// PluginName is the registered plugin name.
	PluginName() string
	// IsRoute is true for a per-route config.
	IsRoute() bool
	// Metrics defines metrics named moe_<plugin>_<name>.
	Metrics() Metrics
	// Log writes config-time lines tagged with the plugin name (per request, use
	// Context.Log).
	Log() Logger
	// Consumers are the chain-level consumers (the moe config's `consumers:`
	// list) that carry a credential for this plugin, in config order. Empty for
	// per-route configs, for a plugin used as its own golang filter and for
	// plugins that registered no credential type. Auth plugins index them next to
	// their own consumer list (shared/consumer.Collect).
	Consumers() []ConsumerCredential
	// CheckOnly is true when the config is only being checked (moectl validate):
	// Init must make every check it makes for real, but start no goroutine,
	// open no connection, listener or file for writing, create nothing on disk
	// and register nothing process-wide; the config is destroyed right after
	// (Destroy must cope with what Init skipped).
	CheckOnly() bool
}

// FieldError names a config field and why its value is wrong. The framework
// adds the plugin name (and the position in the plugin list).
type FieldError struct {
	Field  string // path like "rules[2].key"; empty for the whole config
	Reason string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// FieldErrorf builds a *FieldError.
func FieldErrorf(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Duration is a time.Duration that decodes from "1.5s", "200ms" (and from a
// number of seconds, since protobuf Struct numbers are doubles).
type Duration time.Duration

func (d Duration) D() time.Duration { return time.Duration(d) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("invalid duration %q (want e.g. \"1.5s\", \"200ms\")", s)
		}
		*d = Duration(v)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("invalid duration %s (want a string like \"1s\" or seconds)", b)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// ConfigType names the type in generated docs and schemas.
func (Duration) ConfigType() string { return "duration" }
