package filtermanager

import (
	"fmt"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/log"
	"github.com/moeproxy/moe/shared/metrics"
)

// Per-consumer plugins. A chain-level consumer may carry plugins of its own
// (its own limit, header changes, ...). They are merged over the chain of the
// route a request took, like a per-route config, into a consumer chain built
// once per chain and consumer. When an auth plugin identifies that consumer
// during the request phase, the stream switches to the consumer chain right
// after that plugin returns: the plugins that already ran are the same in
// both chains (a consumer chain may only differ after the last auth plugin),
// so only what follows runs differently, and the response path, access log
// and OnDestroy use the consumer chain.

var (
	consumerChains  = metrics.Counter("moe_consumer_chains_total")
	consumerSkipped = metrics.Counter("moe_consumer_chains_skipped_total")
)

// buildConsumerChains builds c.byConsumer. A consumer whose plugins would
// change a plugin at or before the last auth plugin of c gets no chain (its
// plugins could never run as configured); the problems are returned.
func (c *Chain) buildConsumerChains() []error {
	defs := c.consumers.WithPlugins()
	if len(defs) == 0 {
		return nil
	}
	lastAuth := -1
	for i, p := range c.plugins {
		if p.identifies {
			lastAuth = i
		}
	}
	var problems []error
	c.byConsumer = make(map[string]*Chain, len(defs))
	for _, d := range defs {
		entries, err := config.Merge(c.entries, d.Plugins)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s.plugins: %w", d.Field, err))
			continue
		}
		cc := build(entries)
		cc.shared = c.sharedPrefix(cc)
		if cc.shared <= lastAuth {
			p := c.plugins[cc.shared]
			problems = append(problems, &config.Error{Plugin: p.name, Field: d.Field + ".plugins",
				Reason: fmt.Sprintf("consumer %q changes plugin %s, which runs before %s identifies the consumer; a per-consumer plugin must run after the auth plugins (move %s after them in the chain)",
					d.Consumer.Name, p.name, c.plugins[lastAuth].name, p.name)})
			continue
		}
		c.byConsumer[d.Consumer.Name] = cc
		if extra := len(cc.plugins) - len(c.plugins); extra > c.extraSlots {
			c.extraSlots = extra
		}
		c.bodies = c.bodies || cc.bodies
	}
	return problems
}

// sharedPrefix is the number of leading plugins cc has in common with c (same
// plugin, same config). cc reuses c's plugin objects for them, so the slots of
// a switching stream stay valid.
func (c *Chain) sharedPrefix(cc *Chain) int {
	n := 0
	for n < len(c.plugins) && n < len(cc.plugins) {
		a, b := c.plugins[n], cc.plugins[n]
		if a.name != b.name || !sameConfig(a.config, b.config) {
			break
		}
		cc.plugins[n] = a
		n++
	}
	return n
}

// sameConfig compares parsed configs by identity (they are pointers, or nil).
func sameConfig(a, b any) (same bool) {
	defer func() {
		if recover() != nil { // an uncomparable config type: treat as different
			same = false
		}
	}()
	return a == b
}

// switchConsumer continues a decode pass in the chain of the consumer the
// plugin at position i just identified, if any. It returns where to go on in
// the consumer chain's pass.
func (s *stream) switchConsumer(d *side, k phaseKind, i int) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cc := s.switchTo.Swap(nil)
	if cc == nil {
		return 0, false
	}
	cur := passIn(s.ch.Load(), d, k).order[i]
	idx, _ := passIn(s.ch.Load(), d, k).at(i)
	if idx >= cc.shared || s.touchedAfter(cc.shared) {
		// Identified by a plugin that runs after the consumer's plugins would
		// start, or in a later phase after they ran: too late to switch.
		consumerSkipped.Inc(1)
		log.Printf(envoy.Warn, s.ch.Load().plugins[idx].name, s.reqID, "consumer identified too late for its own plugins; they do not run for this request")
		return 0, false
	}
	np := passIn(cc, d, k)
	pos := -1
	for j, e := range np.order {
		if e == cur {
			pos = j
			break
		}
	}
	if pos < 0 {
		consumerSkipped.Inc(1)
		return 0, false
	}
	s.slots = s.slots[:len(cc.plugins)] // capacity reserved by newStream
	for j := cc.shared; j < len(cc.plugins); j++ {
		sl := &s.slots[j]
		sl.s, sl.p, sl.fp, sl.f = s, cc.plugins[j], nil, filters{}
	}
	s.ch.Store(cc)
	if k == kHeaders {
		// The consumer's plugins may need the whole body where the chain did not
		// (or the other way round): the header pass now stops where cc's does.
		d.buffering = !d.endStream && cc.dec.whole >= 0
	}
	consumerChains.Inc(1)
	return pos + 1, true
}

// touchedAfter reports whether a plugin at slot n or later already has a
// filter (it ran, or its filter was created).
func (s *stream) touchedAfter(n int) bool {
	for j := n; j < len(s.slots); j++ {
		if s.slots[j].isReady() {
			return true
		}
	}
	return false
}

// passIn is the pass of chain c that kind k runs on side d.
func passIn(c *Chain, d *side, k phaseKind) *pass {
	dir := d.dir(c)
	switch k {
	case kWhole:
		return &dir.wholePass
	case kData:
		return &dir.data
	}
	return &dir.headers
}
