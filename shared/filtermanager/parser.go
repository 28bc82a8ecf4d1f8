package filtermanager

import (
	"fmt"
	"runtime/debug"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/log"
	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/registry"
)

// Parser is the config parser of the "moe" filter. Its TypedStruct is the
// ordered plugin list; see config.ParseChain and config.Merge for the rules.
type Parser struct{}

// routeConfig is a parsed per-route (ConfigsPerRoute) plugin list, waiting to
// be merged over its parent.
type routeConfig struct {
	entries []config.Entry
	single  bool // from a plugin's own filter
}

func (r *routeConfig) Destroy() { destroyEntries(r.entries) }

// Parse runs once per config version (never per request). Envoy passes nil
// callbacks for per-route configs. A panic in plugin config code is turned into
// an error: the SDK does not recover here and the process would die.
func (Parser) Parse(a *anypb.Any, cb envoy.ConfigCallbackHandler) (cfg any, err error) {
	defer recoverConfig("moe", &err)
	if cb != nil {
		metrics.Bind(cb)
	}
	raw, err := config.AnyToJSON(a)
	if err != nil {
		return nil, &config.Error{Reason: err.Error()}
	}
	isRoute := cb == nil
	cc, err := config.ParseChain(raw, isRoute)
	if err != nil {
		log.Errorf("rejected config: %v", err)
		return nil, err
	}
	if isRoute {
		return &routeConfig{entries: cc.Entries}, nil
	}
	c, problems := buildWithConsumers(cc.Entries, cc.Consumers)
	c.owned = true
	if len(problems) > 0 {
		c.Destroy()
		err := problems[0]
		log.Errorf("rejected config: %v", err)
		return nil, err
	}
	return c, nil
}

// Merge builds the chain of a route: parent is the filter-level chain (or an
// earlier merge), child the route's list. Envoy caches the result per route, so
// this runs once per route and config version.
func (Parser) Merge(parent, child any) any {
	return mergeChains(parent, child)
}

func mergeChains(parent, child any) (out any) {
	defer func() {
		if r := recover(); r != nil {
			log.Errorf("panic merging route config, keeping the parent's: %v\n%s", r, debug.Stack())
			out = unownedCopy(parent)
		}
	}()
	p, ok := parent.(*Chain)
	if !ok {
		// A route-level config below a filter whose config was rejected.
		p = build(nil)
	}
	switch c := child.(type) {
	case *routeConfig:
		entries, err := config.Merge(p.entries, c.entries)
		if err != nil {
			log.Errorf("route config: %v; keeping the parent's plugin chain", err)
			return unownedCopy(p)
		}
		merged, problems := buildWithConsumers(entries, p.consumers)
		for _, err := range problems {
			log.Errorf("route config: %v; the consumer's plugins do not run on this route", err)
		}
		return merged
	case *Chain:
		return unownedCopy(c)
	}
	return unownedCopy(p)
}

// unownedCopy is what a merge that falls back to its parent returns: a chain
// of the parent's plugins and configs that does not own them. Envoy destroys
// the merged config on its own (when the route table changes) while the
// parent keeps serving, so returning the parent itself would destroy its
// plugins' configs (closing their clients, stopping their goroutines) under
// it. An unowned parent (an earlier merge) serves as it is. Should the rebuild
// panic, the parent itself is returned.
func unownedCopy(parent any) (out any) {
	p, ok := parent.(*Chain)
	if !ok || !p.owned {
		return parent // destroying an unowned chain destroys nothing
	}
	defer func() {
		if r := recover(); r != nil {
			log.Errorf("panic rebuilding the parent chain for a route: %v", r)
			out = p
		}
	}()
	c, _ := buildWithConsumers(p.entries, p.consumers) // problems were reported when p was built
	return c
}

func destroyEntries(es []config.Entry) {
	for _, e := range es {
		if d, ok := e.Config.(interface{ Destroy() }); ok {
			d.Destroy()
		}
	}
}

func recoverConfig(name string, err *error) {
	if r := recover(); r != nil {
		log.Errorf("panic parsing config of %s: %v\n%s", name, r, debug.Stack())
		*err = &config.Error{Plugin: name, Reason: fmt.Sprintf("internal error (panic) while parsing: %v", r)}
	}
}

// PluginParser parses the config of one plugin used as its own golang filter
// (plugin_name: <plugin>): the TypedStruct is the plugin's config itself. A
// per-route config replaces the filter-level one (or goes through the plugin's
// Merge).
type PluginParser struct{ Plugin *registry.Plugin }

func (pp PluginParser) Parse(a *anypb.Any, cb envoy.ConfigCallbackHandler) (cfg any, err error) {
	defer recoverConfig(pp.Plugin.Name, &err)
	if cb != nil {
		metrics.Bind(cb)
	}
	raw, err := config.AnyToJSON(a)
	if err != nil {
		return nil, &config.Error{Plugin: pp.Plugin.Name, Reason: err.Error()}
	}
	isRoute := cb == nil
	e, err := config.DecodeEntry(pp.Plugin, raw, isRoute)
	if err != nil {
		log.Errorf("rejected config: %v", err)
		return nil, err
	}
	entries := []config.Entry{e}
	if isRoute {
		return &routeConfig{entries: entries, single: true}, nil
	}
	ch := build(entries)
	ch.owned = true
	return ch, nil
}

func (pp PluginParser) Merge(parent, child any) any { return mergeChains(parent, child) }
