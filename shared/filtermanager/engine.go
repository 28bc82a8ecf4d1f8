package filtermanager

import (
	"runtime/debug"
	"time"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/log"
	"github.com/moeproxy/moe/shared/registry"
)

// The phase engine: run the plugins of one pass, on Envoy's worker thread
// until the first plugin that may block and in one goroutine from there on,
// then write the coalesced changes and hand the stream back.

// outcome of running plugins.
type outcome uint8

const (
	outOK     outcome = iota // every plugin continued
	outReply                 // a reply is pending in side.reply
	outGone                  // the request was destroyed meanwhile: just stop
	outSwitch                // the chain switched to a consumer's chain: continue there
)

// passOf returns the pass that phase kind k runs on side d, and where it ends:
// the header pass of a buffering side stops before the first WholeBody plugin.
//
// Only the goroutine running the side's phase calls it, and only that
// goroutine changes the chain and d.buffering while the phase runs, so it
// reads them without the lock.
func (s *stream) passOf(d *side, k phaseKind) (*pass, int) {
	ch := s.ch.Load()
	p := passIn(ch, d, k)
	if k == kHeaders && d.buffering {
		return p, d.dir(ch).whole
	}
	return p, len(p.order)
}

// run runs the pass from position from on and finishes the phase. Plugins
// before the first one that may block run right here, on Envoy's worker
// thread; from that one on the phase continues in a goroutine and the status
// is Running.
func (s *stream) run(d *side, k phaseKind, chunkEnd bool, from int) envoy.StatusType {
	for {
		p, to := s.passOf(d, k)
		if from >= to {
			return s.finish(d, k, outOK, false)
		}
		b := p.nextBlock[from]
		if b <= from {
			break // the next plugin may block
		}
		end := min(b, to)
		out, next := s.runRange(d, k, chunkEnd, from, end)
		switch {
		case out == outSwitch:
			from = next // recompute the pass of the consumer's chain
			continue
		case out != outOK || end == to:
			return s.finish(d, k, out, false)
		}
		from = end
	}
	if !s.wentAsync {
		s.wentAsync = true // written once, by the worker thread, before any goroutine
	}
	startAsync(asyncTask{s: s, d: d, k: k, chunkEnd: chunkEnd, from: from})
	return envoy.Running
}

// runAsync is the goroutine half of run: the rest of the pass, then Continue
// or the local reply.
func (s *stream) runAsync(d *side, k phaseKind, chunkEnd bool, from int) {
	for {
		_, to := s.passOf(d, k)
		out, next := s.runRange(d, k, chunkEnd, from, to)
		if out == outSwitch {
			from = next
			continue
		}
		s.finish(d, k, out, true)
		return
	}
}

// runRange calls the plugins at positions [from, to) of the pass; a panic
// ends the request with a 500. After a consumer switch it returns outSwitch
// and the position to continue from in the new chain's pass.
//
// The loop keeps few values live: what every hook of the pass gets is in
// args, on the stack, and callHook builds each call from it. Go has no
// callee-saved registers, so with the arguments in the loop itself every
// plugin call reloaded about a dozen of them from the stack (callgrind: the
// loop spent ~95 instructions per plugin and phase around a 6-instruction
// hook; this saves ~26 per plugin over the four phases of a request).
func (s *stream) runRange(d *side, k phaseKind, chunkEnd bool, from, to int) (out outcome, next int) {
	defer func() {
		if r := recover(); r != nil {
			out = s.onPanic(d, r)
		}
	}()
	p, _ := s.passOf(d, k)
	// The chain changes only by a consumer switch, which ends this range.
	ch := s.ch.Load()
	args := hookArgs{chunkEnd: chunkEnd, allData: k == kData}
	// What the hooks get does not change during a pass (Envoy's entry points
	// attach the body and trailers; the empty chunk below is detached again):
	// looked up once, not per plugin.
	if k == kWhole {
		args.body, args.trailers = s.wholeArgs(d)
		// A whole-body pass without a body (trailers only) gives its
		// streaming plugins an empty last chunk, for their call only: the
		// whole-body plugins after them still get no body, like those before
		// (api.Filter: nil unless the request has one), and GetRequestData
		// agrees.
		args.emptyChunk = args.body == nil
	}
	// Request headers and the switch check matter only in the decode
	// direction's header passes.
	decodeHeaders := d.decode && k != kData
	for i := from; i < to; i++ {
		idx, dataHook := p.at(i)
		sl := &s.slots[idx]
		st := s.callHook(d, sl, idx, dataHook, &args)
		// replied is an atomic so the common case (no reply) takes no lock.
		if st == api.Stop || d.replied.Load() {
			s.stopped(d, sl.p)
			return outReply, 0
		}
		if !decodeHeaders {
			continue
		}
		// Leaving the BeforeRoute group: make Envoy see the changed headers and
		// match the route again.
		if !dataHook && idx == ch.lastBeforeRoute {
			s.routeBoundary()
		}
		if s.switchTo.Load() != nil {
			if pos, ok := s.switchConsumer(d, k, i); ok {
				return outSwitch, pos
			}
		}
	}
	return outOK, 0
}

// hookArgs is what every hook of one pass gets (runRange).
type hookArgs struct {
	body, chunk api.Buffer // chunk: looked up by the first data hook
	trailers    api.HeaderMap
	chunkEnd    bool
	allData     bool // a data pass: every position is a data hook
	emptyChunk  bool // the chunk is an empty one attached for this pass
}

// callHook calls the hook of plugin slot sl (index idx) for the pass.
func (s *stream) callHook(d *side, sl *slot, idx int, dataHook bool, a *hookArgs) (st api.Status) {
	dataHook = dataHook || a.allData
	d.cur = idx
	f := sl.filter()
	var start time.Time
	tracing := s.tracing.Load()
	if tracing {
		start = time.Now()
	}
	if dataHook && a.chunk == nil {
		a.chunk = s.chunkArg(d)
	}
	switch {
	case dataHook && d.decode:
		st = f.recvData().OnReceiveData(sl, a.chunk, a.chunkEnd)
	case dataHook:
		st = f.sendData().AppendData(sl, a.chunk, a.chunkEnd)
	case d.decode:
		st = f.recv.OnReceive(sl, &d.headers, a.body, a.trailers)
	default:
		st = f.send.Append(sl, &d.headers, a.body, a.trailers)
	}
	if tracing {
		s.recordCall(sl.p, d.decode, dataHook, start, st)
	}
	if dataHook && a.emptyChunk {
		s.detachChunk(d)
		a.chunk = nil
	}
	return st
}

// stopped records the end of a pass by plugin p: its reply, or a 500 when it
// returned Stop without one.
func (s *stream) stopped(d *side, p *plugin) {
	s.mu.Lock()
	bare := d.reply == nil
	if bare {
		d.reply = &localReply{code: 500, body: "plugin " + p.name + " stopped the request without replying\n", details: "moe_stop_without_reply{" + p.name + "}"}
	}
	s.mu.Unlock()
	if bare {
		log.Printf(envoy.Error, p.name, s.requestID(), "returned Stop without sending a reply; answering 500")
	}
}

// chunkArg is the chunk for a data hook: the body the entry point attached
// (an empty, read-only one with the trailers). In a whole-body pass without a
// body (trailers only) a streaming plugin gets an empty chunk too.
func (s *stream) chunkArg(d *side) api.Buffer {
	// The entry point attached the chunk before this phase started (the
	// common case): no lock needed to see it. Only chains whose plugins see
	// bodies have data hooks, and their streams set d.body once, when
	// allocated (allocStream), so reading it here races with no write.
	if b := d.body; b != nil && b.present {
		return b
	}
	return s.attachEmptyChunk(d)
}

// attachEmptyChunk attaches the empty chunk of a whole-body pass without a
// body (chunkArg).
func (s *stream) attachEmptyChunk(d *side) api.Buffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := d.bodyLocked(s)
	if !b.present {
		b.attachEmpty()
	}
	return b
}

// detachChunk takes back the empty chunk chunkArg attached.
func (s *stream) detachChunk(d *side) {
	s.mu.Lock()
	d.body.detach() // chunkArg attached it
	s.mu.Unlock()
}

// wholeArgs are the body and trailers of a whole-body pass (nil when the
// request or response has none).
func (s *stream) wholeArgs(d *side) (api.Buffer, api.HeaderMap) {
	var body api.Buffer
	var trailers api.HeaderMap
	s.mu.Lock()
	if d.hasBodyLocked() {
		body = d.body
	}
	if d.trailers != nil && d.trailers.env != nil {
		trailers = d.trailers
	}
	s.mu.Unlock()
	return body, trailers
}

// routeBoundary flushes request headers changed by BeforeRoute plugins and
// makes Envoy match the route again now (RefreshRouteCache: a plain clear
// would leave xds.route_name and the cluster answering the old route until
// the router resolves it, conn_manager_impl.cc), so AfterRoute plugins and
// the router see the route matching the new headers.
func (s *stream) routeBoundary() {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &s.dec.headers
	if !h.routeDirty || s.destroyed {
		return
	}
	h.flushLocked()
	h.routeDirty = false
	s.route = routeCache{}
	s.cb.RefreshRouteCache()
}

func (s *stream) onPanic(d *side, r any) outcome {
	s.mu.Lock()
	p := s.ch.Load().plugins[d.cur]
	gone := s.destroyed
	s.mu.Unlock()
	if gone && api.IsStreamError(r) {
		log.Printf(envoy.Debug, p.name, s.requestID(), "request ended while the plugin was running: %v", r)
		return outGone
	}
	panicsTotal.Inc(1)
	p.panics.Inc(1)
	log.Printf(envoy.Error, p.name, s.requestID(), "panic: %v\n%s", r, debug.Stack())
	if gone {
		return outGone
	}
	s.mu.Lock()
	s.failed = true
	d.reply = &localReply{code: 500, body: p.panicBody, details: p.panicDetails}
	d.replied.Store(true)
	s.mu.Unlock()
	return outReply
}

// finish writes coalesced changes, hands the stream back to Envoy and reports
// the status: returned (sync) or through Continue/SendLocalReply (async).
func (s *stream) finish(d *side, k phaseKind, out outcome, async bool) (st envoy.StatusType) {
	if async {
		// SDK calls panic when Envoy destroyed the stream in the meantime.
		defer func() {
			if r := recover(); r != nil {
				log.Printf(envoy.Debug, "", s.requestID(), "resuming a finished request: %v", r)
			}
		}()
	}
	reply, st, gone := s.release(d, k, out)
	if gone || out == outGone {
		return envoy.Continue // ignored by Envoy for a destroyed stream
	}
	if reply != nil {
		s.sendReply(d, reply)
		return envoy.LocalReply
	}
	if async {
		s.callbacks(d).Continue(st)
	}
	return st
}

// release writes the phase's coalesced changes to Envoy and hands the side
// back (no phase of it runs any more). The lock is released by defer: the SDK
// calls made here panic if Envoy destroyed the stream meanwhile, and a stuck
// lock would hang the worker thread later.
//
// Side state on return: active=false; after the headers, buffering stays set
// (StopAndBuffer: the whole-body pass comes with the data) or the headers
// become read-only (they left for the next filter).
func (s *stream) release(d *side, k phaseKind, out outcome) (reply *localReply, st envoy.StatusType, gone bool) {
	st = envoy.Continue
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		d.active = false
		gone = s.destroyed
		if r := recover(); r != nil {
			log.Printf(envoy.Debug, "", s.reqID, "writing to a finished request: %v", r)
			gone = true
		}
	}()
	reply = d.reply
	d.reply = nil
	// Atomic stores are costly (a locked exchange, a write barrier for the
	// pointer) and these are almost always unset already.
	if d.replied.Load() {
		d.replied.Store(false)
	}
	if s.switchTo.Load() != nil {
		s.switchTo.Store(nil) // a consumer identified too late for its chain
	}
	if s.destroyed {
		return reply, st, false
	}
	s.shareLocked()
	if out == outOK {
		d.headers.flushLocked()
		if d.trailers != nil {
			d.trailers.flushLocked()
		}
		if d.body != nil {
			d.body.flushLocked()
		}
		if k == kHeaders && d.buffering {
			st = envoy.StopAndBuffer
		}
	}
	if st == envoy.Continue {
		if k != kData {
			// The headers leave for upstream/downstream.
			s.handBackLocked(d)
			d.buffering = false
		}
		if k != kHeaders && d.body != nil {
			d.body.detach()
		}
	}
	return reply, st, false
}

func (s *stream) callbacks(d *side) envoy.FilterProcessCallbacks {
	if d.decode {
		return s.cb.DecoderFilterCallbacks()
	}
	return s.cb.EncoderFilterCallbacks()
}

func (s *stream) sendReply(d *side, r *localReply) {
	s.callbacks(d).SendLocalReply(r.code, r.body, r.headers, -1, r.details)
}

// tooLarge answers 413 (request) or 500 (response), as Envoy does when its
// buffer limit is exceeded.
func (s *stream) tooLarge(d *side, k phaseKind) envoy.StatusType {
	s.mu.Lock()
	if d.decode {
		d.reply = &localReply{code: 413, body: "Payload Too Large", details: "moe_request_body_too_large"}
	} else {
		d.reply = &localReply{code: 500, body: "Internal Server Error", details: "moe_response_body_too_large"}
	}
	s.mu.Unlock()
	return s.finish(d, k, outReply, false)
}

func (s *stream) runLogs(haveReq, haveResp bool) {
	info := (*reqInfo)(s)
	var req api.RequestHeaderMap
	var resp api.ResponseHeaderMap
	if haveReq {
		req = &s.dec.headers
	}
	if haveResp {
		resp = &s.enc.headers
	}
	logs := s.chain().logs
	for i := 0; i < len(logs); i++ {
		i = s.logsFrom(logs, i, req, resp, info)
	}
}

// logsFrom runs the log hooks from position from on and returns where it
// stopped: the end, or the hook that panicked (the caller goes on after it).
// One deferred recover for the whole run, not one per hook.
func (s *stream) logsFrom(logs []int, from int, req api.RequestHeaderMap, resp api.ResponseHeaderMap, info api.RequestInfo) (at int) {
	defer func() {
		if r := recover(); r != nil {
			s.hookPanicked(s.slots[logs[at]].p, "Log", r)
		}
	}()
	for at = from; at < len(logs); at++ {
		sl := &s.slots[logs[at]]
		if l := sl.filter().logger(); l != nil {
			l.Log(sl, req, resp, info)
		}
	}
	return at
}

// destroysFrom runs the OnDestroy hooks of slots from position from on, like
// logsFrom. The filter is created here if the request never reached the
// plugin, so OnDestroy runs exactly once per plugin and request.
func (s *stream) destroysFrom(slots []slot, from int) (at int) {
	defer func() {
		if r := recover(); r != nil {
			s.hookPanicked(slots[at].p, "OnDestroy", r)
		}
	}()
	for at = from; at < len(slots); at++ {
		sl := &slots[at]
		if !sl.p.hooks.Has(registry.HookDestroy) {
			continue
		}
		if d := sl.filter().destroyer(); d != nil {
			d.OnDestroy()
		}
	}
	return at
}

// hookPanicked reports a panic in a log or destroy hook: logged and counted,
// it cannot change the response any more.
func (s *stream) hookPanicked(p *plugin, what string, r any) {
	if api.IsStreamError(r) {
		log.Printf(envoy.Debug, p.name, s.requestID(), "%s: %v", what, r)
		return
	}
	panicsTotal.Inc(1)
	p.panics.Inc(1)
	log.Printf(envoy.Error, p.name, s.requestID(), "panic in %s: %v\n%s", what, r, debug.Stack())
}
