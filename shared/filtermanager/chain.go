// Package filtermanager is the "moe" golang filter: an Envoy api.StreamFilter
// that runs an ordered chain of moe plugins, decides per phase whether to run on
// Envoy's worker thread or in a goroutine, copies headers once per phase,
// coalesces writes, sandboxes panics and guards the stream against goroutines
// that outlive their phase (the ownership shim).
package filtermanager

import (
	"sort"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/metrics"
)

// plugin is one enabled plugin of a chain, with everything precomputed.
type plugin struct {
	name    string
	factory api.Factory
	config  any
	needs   api.Needs

	// Which interfaces the plugin's filter implements (probed at config time).
	recv, send, recvData, sendData, logs, destroy bool

	// Precomputed strings so the panic path does not build them.
	panicBody    string
	panicDetails string
	panics       api.Counter
}

// Chain is a parsed, ready-to-run plugin chain: the parsed config object Envoy
// stores per config id, and the result of a per-route merge.
type Chain struct {
	entries []config.Entry // for merges; includes disabled ones
	plugins []*plugin      // enabled, in decode order (BeforeRoute group first)

	dec      []int // plugins with OnReceive, decode order
	enc      []int // plugins with Append, encode (reverse) order
	decData  []int // streaming receivers (OnReceiveData), decode order
	encData  []int // streaming senders (AppendData), encode order
	logs     []int // access loggers, config order
	destroys bool  // some plugin implements Destroyer

	// decWhole/encWhole: position in dec/enc of the first WholeBody plugin, or -1.
	decWhole, encWhole int
	maxReq, maxResp    int
	// beforeRoute: number of BeforeRoute plugins at the start of dec;
	// lastBeforeRoute: the plugin index of the last of them (-1 if none), after
	// which the route is refreshed.
	beforeRoute     int
	lastBeforeRoute int

	// decWholePass/encWholePass: what runs when a buffered body is complete, in
	// order: OnReceive/Append of the plugins from the first WholeBody one on
	// (index i), and the data hook of every streaming plugin, which then sees the
	// whole body as one chunk (encoded as -(i+1)).
	decWholePass, encWholePass           []int
	nextDecWholeBlock, nextEncWholeBlock []int

	// next*Block[i]: first position >= i in the order whose plugin may block
	// (len(order) if none). One extra element so next[len] is valid.
	nextDecBlock, nextEncBlock         []int
	nextDecDataBlock, nextEncDataBlock []int

	// readsRequestLater: some plugin may read request headers after the decode
	// headers phase (a sender, a streaming receiver, or a log hook's context).
	readsRequestLater bool

	// owned is true for chains parsed from a config (they own plugin configs and
	// destroy them); merged chains share their parents' configs.
	owned bool
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

// Build precomputes a chain from entries.
func Build(entries []config.Entry) *Chain {
	c := &Chain{entries: entries, decWhole: -1, encWhole: -1, lastBeforeRoute: -1}
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
		p := &plugin{
			name:         e.Name,
			factory:      e.Plugin.Factory,
			config:       e.Config,
			needs:        e.Needs(),
			panicBody:    "internal error in plugin " + e.Name + "\n",
			panicDetails: "moe_plugin_panic{" + e.Name + "}",
			panics:       metrics.Counter(metrics.Prefix(e.Name) + "panics_total"),
		}
		p.probe()
		c.plugins = append(c.plugins, p)
	}
	for i, p := range c.plugins {
		if p.recv {
			if p.needs.Phase == api.BeforeRoute {
				c.beforeRoute++
				c.lastBeforeRoute = i
			}
			if p.needs.RequestBody == api.WholeBody && c.decWhole < 0 {
				c.decWhole = len(c.dec)
			}
			c.dec = append(c.dec, i)
		}
		if p.recvData && p.needs.RequestBody == api.StreamingBody {
			c.decData = append(c.decData, i)
		}
		if p.needs.RequestBody == api.WholeBody && p.needs.MaxRequestBody > 0 &&
			(c.maxReq == 0 || p.needs.MaxRequestBody < c.maxReq) {
			c.maxReq = p.needs.MaxRequestBody
		}
		if p.needs.ResponseBody == api.WholeBody && p.needs.MaxResponseBody > 0 &&
			(c.maxResp == 0 || p.needs.MaxResponseBody < c.maxResp) {
			c.maxResp = p.needs.MaxResponseBody
		}
		if p.logs {
			c.logs = append(c.logs, i)
		}
		if p.destroy {
			c.destroys = true
		}
	}
	for i := len(c.plugins) - 1; i >= 0; i-- {
		p := c.plugins[i]
		if p.send {
			if p.needs.ResponseBody == api.WholeBody && c.encWhole < 0 {
				c.encWhole = len(c.enc)
			}
			c.enc = append(c.enc, i)
		}
		if p.sendData && p.needs.ResponseBody == api.StreamingBody {
			c.encData = append(c.encData, i)
		}
	}
	c.decWholePass = wholePass(c, c.dec, c.decWhole, c.decData, false)
	c.encWholePass = wholePass(c, c.enc, c.encWhole, c.encData, true)
	c.nextDecWholeBlock = nextBlockPass(c, c.decWholePass, api.BlockReceive)
	c.nextEncWholeBlock = nextBlockPass(c, c.encWholePass, api.BlockSend)
	c.readsRequestLater = len(c.enc) > 0 || len(c.decData) > 0 || len(c.encData) > 0 || c.decWhole >= 0
	c.nextDecBlock = nextBlock(c, c.dec, api.BlockReceive)
	c.nextEncBlock = nextBlock(c, c.enc, api.BlockSend)
	c.nextDecDataBlock = nextBlock(c, c.decData, api.BlockReceive)
	c.nextEncDataBlock = nextBlock(c, c.encData, api.BlockSend)
	return c
}

func nextBlock(c *Chain, order []int, b api.Blocking) []int {
	next := make([]int, len(order)+1)
	next[len(order)] = len(order)
	for i := len(order) - 1; i >= 0; i-- {
		if c.plugins[order[i]].needs.MayBlock&b != 0 {
			next[i] = i
		} else {
			next[i] = next[i+1]
		}
	}
	return next
}

// wholePass merges, in the direction's plugin order, the header hooks of the
// plugins from the first WholeBody one on and the data hooks of the streaming
// plugins (negative entries).
func wholePass(c *Chain, order []int, whole int, data []int, reverse bool) []int {
	if whole < 0 {
		return nil
	}
	isData := map[int]bool{}
	for _, i := range data {
		isData[i] = true
	}
	inHeaders := map[int]bool{}
	for _, i := range order[whole:] {
		inHeaders[i] = true
	}
	// order lists header hooks only; walk all plugins in the direction's order.
	var pass []int
	for n := range c.plugins {
		i := n
		if reverse {
			i = len(c.plugins) - 1 - n
		}
		if inHeaders[i] {
			pass = append(pass, i)
		}
		if isData[i] {
			pass = append(pass, -(i + 1))
		}
	}
	return pass
}

func nextBlockPass(c *Chain, pass []int, b api.Blocking) []int {
	next := make([]int, len(pass)+1)
	next[len(pass)] = len(pass)
	for i := len(pass) - 1; i >= 0; i-- {
		idx := pass[i]
		if idx < 0 {
			idx = -idx - 1
		}
		if c.plugins[idx].needs.MayBlock&b != 0 {
			next[i] = i
		} else {
			next[i] = next[i+1]
		}
	}
	return next
}

// probe calls the factory once to learn which interfaces the filter has.
func (p *plugin) probe() {
	f := p.factory(p.config)
	_, p.recv = f.(api.ReceiverFilter)
	_, p.send = f.(api.SenderFilter)
	_, p.recvData = f.(api.StreamingReceiver)
	_, p.sendData = f.(api.StreamingSender)
	_, p.logs = f.(api.AccessLogger)
	_, p.destroy = f.(api.Destroyer)
	// A streaming filter also gets headers through OnReceive/Append if it has
	// them; without them it still needs a slot in the data order only.
}
