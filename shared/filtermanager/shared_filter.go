package filtermanager

import (
	"reflect"

	"github.com/moeproxy/moe/shared/registry"
)

// sharedFilter returns the filter all requests of p can use, or nil when each
// request needs its own.
//
// Most plugins build their filter at config time and hand out the same one to
// every request (`func(c *Config) api.Filter { return (*filter)(c) }`): the
// factory call and the interface assertions per request and plugin then only
// rebuild the same value (about 15 ns a plugin, BenchmarkEqualWork). A factory
// that returns an equal filter on two calls is taken to do so, and is not
// called again for requests. Per-request filters stay per request: a fresh
// pointer (`&filter{...}`) or a value that cannot be compared is never equal,
// and a filter given handlers (api.ReceiverHandlerSetter, api.SenderHandlerSetter)
// holds the request's handler, so it is never shared either.
func sharedFilter(p *plugin) (fs *filters) {
	if p.hooks.Has(registry.HookReceiveSetter) || p.hooks.Has(registry.HookSendSetter) {
		return nil
	}
	defer func() {
		// Probe ran the factory on this config already. A factory that panics
		// now is called per request as before, and its panic is reported there
		// (once, with the stack, and without the panic text in the reply).
		if recover() != nil {
			fs = nil
		}
	}()
	a, b := p.factory(p.config), p.factory(p.config)
	t := reflect.TypeOf(a)
	if t == nil || t != reflect.TypeOf(b) || !t.Comparable() || a != b {
		return nil
	}
	shared := filtersOf(a, p.hooks)
	return &shared
}
