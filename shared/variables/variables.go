// Package variables is a MOSN-style variable registry: named request facts
// ($header_x-user, $route_name, ...) shared by routing, header mutation, access
// logs and limiting keys. Names are resolved once, at config time (Compile,
// CompileTemplate, or a Var/Template field in a plugin config); per request only
// the getter runs.
package variables

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/moeproxy/moe/shared/api"
)

// Getter computes a variable for a request. arg is the part after the prefix
// for prefix variables ("x-user" for $header_x-user), empty otherwise.
type Getter func(ctx api.Context, arg string) (string, bool)

// The variable table is global like the plugin registry: built-ins and plugins
// register from init(), configs read it when they are parsed.
var (
	mu       sync.RWMutex
	exact    = map[string]Getter{}
	prefixes = map[string]Getter{} // key ends with '_'
	// lowerArg marks prefixes whose argument is case-insensitive (header names).
	lowerArg = map[string]bool{}
)

// Register adds a variable "$name". It panics on a duplicate (a programming
// error found at start-up).
func Register(name string, fn func(ctx api.Context) (string, bool)) {
	name = strings.TrimPrefix(name, "$")
	mu.Lock()
	defer mu.Unlock()
	if _, dup := exact[name]; dup {
		panic("variables: duplicate variable $" + name)
	}
	exact[name] = func(ctx api.Context, _ string) (string, bool) { return fn(ctx) }
}

// RegisterPrefix adds a family "$<prefix><arg>", e.g. RegisterPrefix("header_",
// ...). The prefix must end with '_'.
func RegisterPrefix(prefix string, fn Getter) {
	registerPrefix(prefix, fn, false)
}

func registerPrefix(prefix string, fn Getter, lower bool) {
	prefix = strings.TrimPrefix(prefix, "$")
	if !strings.HasSuffix(prefix, "_") {
		panic("variables: prefix must end with '_': " + prefix)
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := prefixes[prefix]; dup {
		panic("variables: duplicate prefix $" + prefix)
	}
	prefixes[prefix] = fn
	lowerArg[prefix] = lower
}

// Var is a compiled variable.
type Var struct {
	name string
	fn   Getter
	arg  string
}

// Compile resolves a variable name ("$host" or "host"). Unknown names are
// errors listing what is known.
func Compile(name string) (Var, error) {
	n := strings.TrimPrefix(name, "$")
	mu.RLock()
	defer mu.RUnlock()
	if fn, ok := exact[n]; ok {
		return Var{name: n, fn: fn}, nil
	}
	// Longest matching prefix wins, so "resp_header_" beats a hypothetical "resp_".
	best := ""
	for p := range prefixes {
		if strings.HasPrefix(n, p) && len(p) > len(best) && len(n) > len(p) {
			best = p
		}
	}
	if best != "" {
		arg := n[len(best):]
		if lowerArg[best] {
			arg = strings.ToLower(arg)
		}
		return Var{name: n, fn: prefixes[best], arg: arg}, nil
	}
	return Var{}, fmt.Errorf("unknown variable $%s (known: %s)", n, knownLocked())
}

func knownLocked() string {
	names := make([]string, 0, len(exact)+len(prefixes))
	for n := range exact {
		names = append(names, "$"+n)
	}
	for p := range prefixes {
		names = append(names, "$"+p+"<name>")
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// MustCompile is Compile for package-level variables; it panics on error.
func MustCompile(name string) Var {
	v, err := Compile(name)
	if err != nil {
		panic(err)
	}
	return v
}

// Name is the variable name without '$'.
func (v Var) Name() string { return v.name }

// IsZero reports an unset Var (a config field that was not given).
func (v Var) IsZero() bool { return v.fn == nil }

// Get evaluates the variable for a request.
func (v Var) Get(ctx api.Context) (string, bool) {
	if v.fn == nil {
		return "", false
	}
	return v.fn(ctx, v.arg)
}

func (v *Var) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("expected a variable name string like \"$header_x-user\"")
	}
	c, err := Compile(s)
	if err != nil {
		return err
	}
	*v = c
	return nil
}

func (v Var) MarshalJSON() ([]byte, error) { return json.Marshal("$" + v.name) }

// Lookup resolves and evaluates a variable by name at request time (slow
// path; api.Context.Var uses it).
func Lookup(ctx api.Context, name string) (string, bool) {
	v, err := Compile(name)
	if err != nil {
		return "", false
	}
	return v.Get(ctx)
}

// ConfigType names the type in generated docs and schemas.
func (Var) ConfigType() string { return "variable" }
