// Package config decodes plugin configs strictly from Envoy's TypedStruct into
// typed Go structs, applies defaults and validation, and parses and merges the
// plugin list of the moe filter.
package config

import (
	"fmt"
	"strings"
)

// Error is a rejected config. It names the plugin (empty for the plugin list
// itself), the field path and the reason.
type Error struct {
	Plugin string
	Field  string
	Reason string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("invalid config")
	if e.Plugin != "" {
		fmt.Fprintf(&b, " of plugin %q", e.Plugin)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %s", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

func joinPath(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case strings.HasPrefix(field, "["):
		return prefix + field
	}
	return prefix + "." + field
}
