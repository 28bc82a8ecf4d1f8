// Package cel is the condition/DSL plugin (MOSN's dsl filter, HTNN's
// celScript): rules whose conditions are CEL expressions over the request
// (attributes, headers, query, cookies, client address), the consumer, the
// route and moe variables, compiled and type-checked at config time through
// shared/expr. A matching rule denies the request with a status and body,
// sets or removes headers, sets variables, marks the request or writes a log
// line, at the request, the response or the log point.
//
// Variables it sets are $cel_<name> (and the marks $cel_marks) for later
// plugins and templates, vars["cel_<name>"] in later CEL expressions, and,
// being strings in the request state, filter state moe.state.cel.<name> for
// later golang filters and Envoy's access log.
package cel

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/variables"
)

// Name is the registered plugin name.
const Name = "cel"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "CEL rules at the request, response and log points: deny, set/remove headers, set variables, mark, log",
		NewConfig:   newConfig,
		// Stateless: Init prebuilt the filter value implementing exactly the
		// hooks the rules need (a point without rules costs nothing).
		Factory: registry.Typed(func(c *Config) api.Filter { return c.filter }),
		// The phase comes from the config (Needs below). CEL evaluation is
		// CPU work bounded by a cost limit: never MayBlock.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
	// $cel_<name>: a variable set by a rule of this request (set_vars), or
	// $cel_marks, the request's marks.
	variables.RegisterPrefix("cel_", func(ctx api.Context, name string) (string, bool) {
		v, ok := ctx.GetState(statePrefix + name)
		s, _ := v.(string)
		return s, ok && s != ""
	})
}

var (
	_ api.ReceiverFilter = (*onRequest)(nil)
	_ api.SenderFilter   = (*onResponse)(nil)
	_ api.AccessLogger   = (*onLog)(nil)

	_ api.Validator     = (*Config)(nil)
	_ api.Initializer   = (*Config)(nil)
	_ api.NeedsProvider = (*Config)(nil)
)
