// Package filtermanager is the "moe" golang filter: an Envoy api.StreamFilter
// that runs an ordered chain of moe plugins, decides per phase whether to run on
// Envoy's worker thread or in a goroutine, copies headers once per phase,
// coalesces writes, sandboxes panics and guards the stream against goroutines
// that outlive their phase (the ownership shim).
//
// Files: chain.go builds a Chain from config (everything a request needs,
// precomputed per direction); consumers.go the per-consumer chains;
// stream.go is the per-request state; filter.go the Envoy entry points
// (DecodeHeaders, EncodeData, OnLog, ...); engine.go runs the plugins of a
// phase and hands the stream back; context.go and handlers.go are what
// plugins see (api.Context and the MOSN-style handlers); headers.go, body.go
// and info.go the header maps, bodies and stream info; shared_state.go carries
// the consumer and string state to later golang filters through Envoy's
// filter state.
package filtermanager

import (
	"sort"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/log"
	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/registry"
)

// plugin is one enabled plugin of a chain, with everything precomputed.
type plugin struct {
	name    string
	factory api.Factory
	config  any
	needs   api.Needs
	hooks   registry.Hooks
	// identifies marks plugins that establish the consumer (they accept
	// per-consumer credentials); per-consumer plugins run after the last one.
	identifies bool
	// shared is the filter every request uses when the factory hands out one
	// config-time filter (sharedFilter); nil: one filter per request.
	shared *filters

	// Precomputed strings so the panic path does not build them.
	panicBody    string
	panicDetails string
	panics       api.Counter
}

// pass is one ordered run over plugins: the positions in Chain.plugins of the
// plugins it calls, and for each position i, nextBlock[i] = the first position
// >= i whose plugin may block (len(order) if none; one extra element so that
// nextBlock[len(order)] is valid).
//
// In a whole-body pass an entry may be negative: -(i+1) is the data hook of
// streaming plugin i, which then sees the whole body as one chunk.
type pass struct {
	order     []int
	nextBlock []int
}

// at returns the plugin index of position i and whether it is a data hook.
func (p *pass) at(i int) (idx int, dataHook bool) {
	idx = p.order[i]
	if idx < 0 {
		return -idx - 1, true
	}
	return idx, false
}

// direction is everything one direction (decode = request, encode =
// response) needs, built once per chain.
type direction struct {
	headers pass // header hooks (OnReceive / Append), in this direction's order
	data    pass // streaming data hooks (OnReceiveData / AppendData)
	// whole is the position in headers.order of the first WholeBody plugin, or
	// -1: the header pass stops there and the rest runs on the complete body.
	whole     int
	wholePass pass
	// maxBody caps a buffered body (the smallest MaxRequestBody /
	// MaxResponseBody of the WholeBody plugins; 0 = only Envoy's own limit).
	maxBody int
}

// seesBodies reports whether a plugin of the direction gets its body.
func (d *direction) seesBodies() bool { return d.whole >= 0 || len(d.data.order) > 0 }

// Chain is a parsed, ready-to-run plugin chain: the parsed config object Envoy
// stores per config id, the result of a per-route merge, or the chain a
// consumer's own plugins make of one of those.
type Chain struct {
	entries []config.Entry // for merges; includes disabled ones
	plugins []*plugin      // enabled, in decode order (BeforeRoute group first)

	dec, enc direction
	logs     []int // access loggers, config order
	destroys bool  // some plugin implements Destroyer

	// lastBeforeRoute is the index of the last BeforeRoute plugin with a
	// receive hook (-1 if none): after it the route is refreshed.
	lastBeforeRoute int

	// observes: some plugin reads decisions (Needs.Observe): record them.
	observes bool

	// readsRequestLater: some plugin may read request headers after the decode
	// headers phase (a sender, a streaming receiver, or a log hook's context);
	// readsResponseLater: response headers after the encode headers phase (a
	// streaming sender).
	readsRequestLater, readsResponseLater bool

	// consumers are the chain-level consumer definitions (filter level only;
	// merged chains inherit them) and byConsumer the chain each consumer with
	// plugins of its own switches to once identified (see consumers.go).
	consumers  *config.Consumers
	byConsumer map[string]*Chain
	// defined are the chain-level consumers by name (nil when none).
	defined map[string]*api.Consumer
	// extraSlots is how many more plugins the longest consumer chain has, so
	// a stream reserves its slots once and never moves them.
	extraSlots int
	// bodies: a plugin of this chain or of a consumer's chain sees bodies
	// (streaming or whole), so streams hold both sides' bodies inline
	// (allocStream); other streams allocate a body when first needed, and
	// every stream its trailers.
	bodies bool
	// shared is how many leading plugins a consumer chain has in common with
	// the chain it was built from (0 for other chains).
	shared int

	// owned is true for chains parsed from a config (they own plugin configs and
	// destroy them); merged chains share their parents' configs.
	owned bool

	// encoded caches the filter-state JSON of consumers this chain wrote,
	// decoded the consumers it read from the filter state (shared_state.go).
	encoded consumerEncodings
	decoded consumerDecodings
}

// Destroy implements Envoy's api.Config: called when Envoy drops the config.
func (c *Chain) Destroy() {
	if !c.owned {
		return
	}
	for _, e := range c.entries {
		if d, ok := e.Config.(api.Destroyable); ok {
			d.Destroy()
		}
	}
	c.consumers.Destroy()
}

// Plugins lists the enabled plugin names in decode order (for tests and tools).
func (c *Chain) Plugins() []string {
	out := make([]string, len(c.plugins))
	for i, p := range c.plugins {
		out[i] = p.name
	}
	return out
}

var panicsTotal = metrics.Counter("moe_panics_total")

// Build precomputes a chain from entries (for tests and tools; configs go
// through the Parser).
func Build(entries []config.Entry) *Chain { return build(entries) }

// buildWithConsumers precomputes a chain and, from the chain-level consumers
// (nil for none), the chain of each consumer with plugins of its own. The
// errors name consumers whose plugins cannot run as configured.
func buildWithConsumers(entries []config.Entry, consumers *config.Consumers) (*Chain, []error) {
	c := build(entries)
	c.consumers = consumers
	c.defined = consumers.ByName()
	return c, c.buildConsumerChains()
}

func build(entries []config.Entry) *Chain {
	c := &Chain{entries: entries, lastBeforeRoute: -1}
	// Stable partition: BeforeRoute plugins keep their relative order and go first.
	enabled := make([]config.Entry, 0, len(entries))
	for _, e := range entries {
		if !e.Disabled {
			enabled = append(enabled, e)
		}
	}
	sort.SliceStable(enabled, func(i, j int) bool {
		return enabled[i].Needs().Phase == api.BeforeRoute && enabled[j].Needs().Phase != api.BeforeRoute
	})
	for _, e := range enabled {
		c.plugins = append(c.plugins, newPlugin(e))
	}
	var decData, encData []int
	for i, p := range c.plugins {
		if p.hooks.Has(registry.HookReceive) && p.needs.Phase == api.BeforeRoute {
			c.lastBeforeRoute = i
		}
		if p.hooks.Has(registry.HookReceiveData) && p.needs.RequestBody == api.StreamingBody {
			decData = append(decData, i)
		}
		if p.hooks.Has(registry.HookLog) {
			c.logs = append(c.logs, i)
		}
		if p.hooks.Has(registry.HookDestroy) {
			c.destroys = true
		}
		if p.needs.Observe {
			c.observes = true
		}
	}
	for i := len(c.plugins) - 1; i >= 0; i-- {
		if p := c.plugins[i]; p.hooks.Has(registry.HookSendData) && p.needs.ResponseBody == api.StreamingBody {
			encData = append(encData, i)
		}
	}
	c.dec = c.buildDirection(true, decData)
	c.enc = c.buildDirection(false, encData)
	c.bodies = c.dec.seesBodies() || c.enc.seesBodies()
	c.readsRequestLater = len(c.enc.headers.order) > 0 || len(decData) > 0 || len(encData) > 0 || c.dec.whole >= 0
	c.readsResponseLater = len(encData) > 0
	return c
}

func newPlugin(e config.Entry) *plugin {
	p := &plugin{
		name:         e.Name,
		factory:      e.Plugin.Factory,
		config:       e.Config,
		needs:        e.Needs(),
		hooks:        e.Hooks,
		identifies:   e.Plugin.NewCredential != nil,
		panicBody:    "internal error in plugin " + e.Name + "\n",
		panicDetails: "moe_plugin_panic{" + e.Name + "}",
		panics:       metrics.Counter(metrics.Prefix(e.Name) + "panics_total"),
	}
	if p.hooks == 0 {
		// Entries built by hand (tests, tools) did not go through the parser's
		// contract check; probe here. A broken filter gets no hooks and is logged.
		h, err := registry.Probe(e.Plugin, e.Config, p.needs)
		if err != nil {
			log.Errorf("plugin %s: %v", e.Name, err)
		}
		p.hooks = h
	}
	if p.hooks != 0 {
		p.shared = sharedFilter(p)
	}
	return p
}

// buildDirection precomputes one direction's passes. Decode runs the plugins
// in decode order, encode in reverse.
func (c *Chain) buildDirection(decode bool, data []int) direction {
	hook, block, body := registry.HookSend, api.BlockSend, func(n api.Needs) (api.BodyMode, int) { return n.ResponseBody, n.MaxResponseBody }
	if decode {
		hook, block, body = registry.HookReceive, api.BlockReceive, func(n api.Needs) (api.BodyMode, int) { return n.RequestBody, n.MaxRequestBody }
	}
	d := direction{whole: -1}
	var headers []int
	for n := range c.plugins {
		i := n
		if !decode {
			i = len(c.plugins) - 1 - n
		}
		p := c.plugins[i]
		mode, max := body(p.needs)
		if mode == api.WholeBody && max > 0 && (d.maxBody == 0 || max < d.maxBody) {
			d.maxBody = max
		}
		if !p.hooks.Has(hook) {
			continue
		}
		if mode == api.WholeBody && d.whole < 0 {
			d.whole = len(headers)
		}
		headers = append(headers, i)
	}
	d.headers = c.newPass(headers, block)
	d.data = c.newPass(data, block)
	d.wholePass = c.newPass(c.wholeOrder(decode, headers, d.whole, data), block)
	return d
}

// wholeOrder merges, in the direction's plugin order, the header hooks of the
// plugins from the first WholeBody one on and the data hooks of the streaming
// plugins (negative entries).
func (c *Chain) wholeOrder(decode bool, headers []int, whole int, data []int) []int {
	if whole < 0 {
		return nil
	}
	isData := map[int]bool{}
	for _, i := range data {
		isData[i] = true
	}
	inHeaders := map[int]bool{}
	for _, i := range headers[whole:] {
		inHeaders[i] = true
	}
	var order []int
	for n := range c.plugins {
		i := n
		if !decode {
			i = len(c.plugins) - 1 - n
		}
		if inHeaders[i] {
			order = append(order, i)
		}
		if isData[i] {
			order = append(order, -(i + 1))
		}
	}
	return order
}

func (c *Chain) newPass(order []int, b api.Blocking) pass {
	p := pass{order: order, nextBlock: make([]int, len(order)+1)}
	p.nextBlock[len(order)] = len(order)
	for i := len(order) - 1; i >= 0; i-- {
		idx, _ := p.at(i)
		if c.plugins[idx].needs.MayBlock&b != 0 {
			p.nextBlock[i] = i
		} else {
			p.nextBlock[i] = p.nextBlock[i+1]
		}
	}
	return p
}
