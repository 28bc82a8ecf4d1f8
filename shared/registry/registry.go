// Package registry is where plugins register themselves (from an init
// function) and where the framework looks them up by name.
package registry

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"sync"

	"github.com/moeproxy/moe/shared/api"
)

// Plugin describes one plugin.
type Plugin struct {
	// Name as used in config ("plugins: [{name: ...}]") and as the name of the
	// plugin's own golang filter. Lower case letters, digits, '-' and '_'.
	Name string
	// Description is one line for `moectl plugins`.
	Description string
	// NewConfig returns a pointer to a new config struct holding the defaults.
	// nil means the plugin takes no config (only {} or an absent config is valid).
	NewConfig func() any
	// Factory builds the per-request filter from the parsed config; one that
	// returns one config-time filter is only called at config time (see
	// api.Factory).
	Factory api.Factory
	// Needs declares phase, body needs and blocking phases (see api.Needs).
	Needs api.Needs
	// Merge, if set, merges a per-route config of this plugin over the parent's.
	// Without it the route's config replaces the parent's (route wins).
	Merge func(parent, route any) any
	// NewCredential, set by auth plugins, returns a pointer to the credential a
	// chain-level consumer carries for this plugin (the moe config's
	// `consumers[].auth.<name>`), decoded strictly like a config (Validate is
	// called if implemented). The plugin reads them in Init through
	// ConfigEnv.Consumers. A plugin with a credential type identifies
	// consumers: per-consumer plugins run after it, and it cannot itself be a
	// per-consumer plugin.
	NewCredential func() any
}

// nameRE and maxNameLen are what a plugin name may be. The length is checked
// apart: a bounded repetition ({0,62}) compiles to 63 copies of the class,
// ~22 KB that every GC cycle of the library would mark again.
var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

const maxNameLen = 63

// The registry is process-global on purpose: plugins register from init()
// functions of packages blank-imported into the one libgolang.so, and Envoy looks
// filters up by name in the same process. It is written during init and read
// afterwards; the mutex covers late registrations in tests.
var (
	mu        sync.RWMutex
	plugins   = map[string]*Plugin{}
	listeners []func(*Plugin)
)

// Register adds a plugin. It panics on an invalid or duplicate name or a nil
// Factory, because that is a programming error found at process start.
func Register(p Plugin) {
	if len(p.Name) > maxNameLen || !nameRE.MatchString(p.Name) {
		panic(fmt.Sprintf("registry: invalid plugin name %q (want %s, at most %d bytes)", p.Name, nameRE, maxNameLen))
	}
	if p.Factory == nil {
		panic(fmt.Sprintf("registry: plugin %q has no Factory", p.Name))
	}
	if p.NewConfig != nil {
		// The config is decoded into what NewConfig returns: it must be a pointer.
		if c := p.NewConfig(); c == nil || reflect.TypeOf(c).Kind() != reflect.Pointer {
			panic(fmt.Sprintf("registry: plugin %q: NewConfig must return a non-nil pointer, got %T", p.Name, c))
		}
	}
	if p.NewCredential != nil {
		if c := p.NewCredential(); c == nil || reflect.TypeOf(c).Kind() != reflect.Pointer {
			panic(fmt.Sprintf("registry: plugin %q: NewCredential must return a non-nil pointer, got %T", p.Name, c))
		}
	}
	if p.Name == "moe" {
		panic(`registry: "moe" is the name of the plugin chain filter`)
	}
	if err := probeDefault(&p); err != nil {
		panic(fmt.Sprintf("registry: plugin %q: %v", p.Name, err))
	}
	mu.Lock()
	if _, dup := plugins[p.Name]; dup {
		mu.Unlock()
		panic(fmt.Sprintf("registry: plugin %q registered twice", p.Name))
	}
	pp := &p
	plugins[p.Name] = pp
	ls := append([]func(*Plugin){}, listeners...)
	mu.Unlock()
	for _, l := range ls {
		l(pp)
	}
}

// probeDefault checks the filter built from the default config against the
// plugin contract, so a filter with no phase or a misspelt signature fails at
// process start. Factories that need an initialised config may panic or return
// nil here; those are checked by Probe when a real config is parsed.
func probeDefault(p *Plugin) error {
	var cfg any
	f := func() (f api.Filter) {
		defer func() {
			if recover() != nil {
				f = nil
			}
		}()
		if p.NewConfig != nil {
			cfg = p.NewConfig()
		}
		return p.Factory(cfg)
	}()
	if f == nil {
		return nil
	}
	h, err := HooksOf(f)
	if err != nil {
		return err
	}
	if _, perConfig := cfg.(api.NeedsProvider); perConfig {
		return nil
	}
	return CheckNeeds(p.Needs, h)
}

// Get returns the plugin registered under name.
func Get(name string) (*Plugin, bool) {
	mu.RLock()
	p, ok := plugins[name]
	mu.RUnlock()
	return p, ok
}

// Names lists registered plugins, sorted.
func Names() []string {
	mu.RLock()
	names := make([]string, 0, len(plugins))
	for n := range plugins {
		names = append(names, n)
	}
	mu.RUnlock()
	sort.Strings(names)
	return names
}

// OnRegister calls fn for every plugin registered so far and for every later
// one. shared/envoy uses it to register each plugin as its own golang filter,
// whatever the package init order is.
func OnRegister(fn func(*Plugin)) {
	mu.Lock()
	listeners = append(listeners, fn)
	existing := make([]*Plugin, 0, len(plugins))
	for _, p := range plugins {
		existing = append(existing, p)
	}
	mu.Unlock()
	sort.Slice(existing, func(i, j int) bool { return existing[i].Name < existing[j].Name })
	for _, p := range existing {
		fn(p)
	}
}

// Typed adapts a factory taking the plugin's config type:
//
//	Factory: registry.Typed(func(c *Config) api.Filter { return &filter{cfg: c} }),
func Typed[C any](fn func(cfg *C) api.Filter) api.Factory {
	return func(config any) api.Filter { return fn(config.(*C)) }
}

// Unregister removes a plugin; for tests only.
func Unregister(name string) {
	mu.Lock()
	delete(plugins, name)
	mu.Unlock()
}
