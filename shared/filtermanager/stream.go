package filtermanager

import (
	"context"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/log"
)

// phase kinds of a run over an order of plugins.
type phaseKind uint8

const (
	kHeaders phaseKind = iota // OnReceive/Append on headers (body not needed or not buffered)
	kWhole                    // OnReceive/Append with the whole body (trailers only when there is no body)
	kData                     // OnReceiveData/AppendData on a chunk
)

// outcome of running plugins.
type outcome uint8

const (
	outOK    outcome = iota // every plugin continued
	outReply                // a reply is pending in side.reply
	outGone                 // the request was destroyed meanwhile: just stop
)

type localReply struct {
	code    int
	body    string
	headers map[string][]string
	details string
}

// side is the state of one direction (decode = request, encode = response).
type side struct {
	decode   bool
	headers  headerMap
	trailers headerMap
	body     bodyBuf
	// active: a phase of this side is running; the chain owns the stream.
	active bool
	// buffering: headers returned StopAndBuffer; the whole-body pass is pending.
	buffering bool
	// cur is the plugin running now, for panic attribution. Only the goroutine
	// running the side's phase touches it.
	cur     int
	reply   *localReply
	replied atomic.Bool // reply != nil, readable without the lock
}

// stream is the per-request filter Envoy calls (one per request).
type stream struct {
	// mu guards everything below that goroutines may touch: ownership flags,
	// header/body wrappers, request values.
	mu       sync.Mutex
	createMu sync.Mutex // serializes lazy plugin filter creation
	cb       envoy.FilterCallbackHandler
	ch       *Chain

	dec, enc        side
	logActive       bool
	destroyed       bool
	failed          bool // a panic reply was sent: no more plugin code for this request
	logged          bool
	destroyHooksRan bool // OnDestroy hooks ran

	done     chan struct{}
	consumer *api.Consumer
	state    map[string]any
	reqID    string
	route    routeCache
	start    time.Time

	slots   []slot
	slotBuf [4]slot
}

type routeCache struct {
	name, cluster       string
	haveName, haveClust bool
}

// ownedLocked: some phase runs, so the chain owns the stream.
func (s *stream) ownedLocked() bool { return s.dec.active || s.enc.active || s.logActive }

// Factory is the api.StreamFilterFactory of the moe filter (and of each
// plugin's own filter).
func Factory(cfg any, cb envoy.FilterCallbackHandler) envoy.StreamFilter {
	c, ok := cfg.(*Chain)
	if !ok || c == nil {
		return &envoy.PassThroughStreamFilter{}
	}
	return newStream(c, cb)
}

func newStream(c *Chain, cb envoy.FilterCallbackHandler) *stream {
	s := &stream{cb: cb, ch: c, start: time.Now()}
	s.dec.decode = true
	s.dec.headers = headerMap{s: s, kind: reqHeaders}
	s.dec.trailers = headerMap{s: s, kind: reqTrailers}
	s.dec.body = bodyBuf{s: s, kind: reqBody}
	s.enc.headers = headerMap{s: s, kind: respHeaders}
	s.enc.trailers = headerMap{s: s, kind: respTrailers}
	s.enc.body = bodyBuf{s: s, kind: respBody}
	if n := len(c.plugins); n <= len(s.slotBuf) {
		s.slots = s.slotBuf[:n]
	} else {
		s.slots = make([]slot, n)
	}
	for i := range s.slots {
		s.slots[i].s = s
		s.slots[i].p = c.plugins[i]
	}
	return s
}

func (s *stream) order(d *side, k phaseKind) (order, next []int) {
	c := s.ch
	switch {
	case d.decode && k == kWhole:
		return c.decWholePass, c.nextDecWholeBlock
	case k == kWhole:
		return c.encWholePass, c.nextEncWholeBlock
	case d.decode && k == kData:
		return c.decData, c.nextDecDataBlock
	case d.decode:
		return c.dec, c.nextDecBlock
	case k == kData:
		return c.encData, c.nextEncDataBlock
	}
	return c.enc, c.nextEncBlock
}

// run runs positions [from, to) of the order for kind k and finishes the phase.
// Plugins before the first one that may block run right here, on Envoy's worker
// thread; from that one on the phase continues in a goroutine and the status is
// Running.
func (s *stream) run(d *side, k phaseKind, chunkEnd bool, from, to int) envoy.StatusType {
	_, next := s.order(d, k)
	b := next[from]
	if b >= to {
		return s.finish(d, k, s.runRange(d, k, chunkEnd, from, to), false)
	}
	if b > from {
		if out := s.runRange(d, k, chunkEnd, from, b); out != outOK {
			return s.finish(d, k, out, false)
		}
	}
	go func() {
		s.finish(d, k, s.runRange(d, k, chunkEnd, b, to), true)
	}()
	return envoy.Running
}

// runRange calls the plugins; a panic ends the request with a 500.
func (s *stream) runRange(d *side, k phaseKind, chunkEnd bool, from, to int) (out outcome) {
	defer func() {
		if r := recover(); r != nil {
			out = s.onPanic(d, r)
		}
	}()
	order, _ := s.order(d, k)
	c := s.ch
	for i := from; i < to; i++ {
		idx := order[i]
		dataHook := k == kData
		if idx < 0 { // whole pass: a streaming plugin's data hook
			idx, dataHook = -idx-1, true
		}
		d.cur = idx
		sl := &s.slots[idx]
		f := sl.filter()
		var st api.Status
		switch {
		case dataHook && d.decode:
			st = f.recvData().OnReceiveData(sl, s.chunkArg(d), chunkEnd)
		case dataHook:
			st = f.sendData().AppendData(sl, s.chunkArg(d), chunkEnd)
		case d.decode:
			body, trailers := s.wholeArgs(d, k)
			st = f.recv.OnReceive(sl, &d.headers, body, trailers)
		default:
			body, trailers := s.wholeArgs(d, k)
			st = f.send.Append(sl, &d.headers, body, trailers)
		}
		// replied is an atomic so the common case (no reply) takes no lock.
		if st == api.Stop || d.replied.Load() {
			s.mu.Lock()
			bare := d.reply == nil
			p := c.plugins[idx]
			if bare {
				d.reply = &localReply{code: 500, body: "plugin " + p.name + " stopped the request without replying\n", details: "moe_stop_without_reply{" + p.name + "}"}
			}
			s.mu.Unlock()
			if bare {
				log.Printf(envoy.Error, p.name, s.requestID(), "returned Stop without sending a reply; answering 500")
			}
			return outReply
		}
		// Leaving the BeforeRoute group: make Envoy see the changed headers and
		// match the route again.
		if d.decode && !dataHook && idx == c.lastBeforeRoute {
			s.routeBoundary()
		}
	}
	return outOK
}

// chunkArg is the chunk for a data hook: the body (an empty chunk when the
// request has trailers but no body).
func (s *stream) chunkArg(d *side) api.Buffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !d.body.present {
		d.body.attachEmpty()
	}
	return &d.body
}

func (s *stream) wholeArgs(d *side, k phaseKind) (api.Buffer, api.HeaderMap) {
	if k != kWhole {
		return nil, nil
	}
	var body api.Buffer
	var trailers api.HeaderMap
	s.mu.Lock()
	if d.body.present {
		body = &d.body
	}
	if d.trailers.env != nil {
		trailers = &d.trailers
	}
	s.mu.Unlock()
	return body, trailers
}

// routeBoundary flushes request headers changed by BeforeRoute plugins and
// clears Envoy's route cache so AfterRoute plugins (and the router) see the
// route matching the new headers.
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
	s.cb.ClearRouteCache()
}

func (s *stream) onPanic(d *side, r any) outcome {
	p := s.ch.plugins[d.cur]
	s.mu.Lock()
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
	d.replied.Store(false)
	if out == outOK && !s.destroyed {
		d.headers.flushLocked()
		d.trailers.flushLocked()
		d.body.flushLocked()
		if k == kHeaders && d.buffering {
			st = envoy.StopAndBuffer
		}
	}
	if st == envoy.Continue && !s.destroyed {
		if k != kData {
			// The headers leave for upstream/downstream. Make sure their Go copy
			// exists if later phases may read them: afterwards Envoy no longer lets
			// Go copy them.
			s.preloadLocked(d)
			d.headers.writable = false
			d.buffering = false
		}
		if k != kHeaders {
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

// preloadLocked makes the SDK copy the request headers while Envoy still
// allows it, when something after the decode headers phase may read them
// (senders, streaming receivers, request id for logs). One cgo call, and only
// if no plugin read a header already.
func (s *stream) preloadLocked(d *side) {
	if !d.decode || d.headers.env == nil || !s.ch.readsRequestLater {
		return
	}
	d.headers.env.Get(":path")
}

// enter starts a phase of side d; it returns false when plugin code must not
// run (a panic reply was sent, or the request is gone).
func (s *stream) enter(d *side) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed || s.destroyed {
		return false
	}
	d.active = true
	return true
}

// runWhole runs the whole-body pass once the buffered body is complete.
// end is false when trailers follow (streaming plugins then get the trailers
// with an empty last chunk).
func (s *stream) runWhole(d *side, end bool) envoy.StatusType {
	order, _ := s.order(d, kWhole)
	return s.run(d, kWhole, end, 0, len(order))
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

// ---- envoy.StreamFilter ----

func (s *stream) DecodeHeaders(h envoy.RequestHeaderMap, endStream bool) envoy.StatusType {
	return s.onHeaders(&s.dec, h, endStream, s.ch.dec, s.ch.decWhole, s.ch.maxReq)
}

func (s *stream) EncodeHeaders(h envoy.ResponseHeaderMap, endStream bool) envoy.StatusType {
	return s.onHeaders(&s.enc, h, endStream, s.ch.enc, s.ch.encWhole, s.ch.maxResp)
}

func (s *stream) onHeaders(d *side, h envoy.HeaderMap, end bool, order []int, whole, max int) envoy.StatusType {
	s.mu.Lock()
	d.headers.attach(h, true)
	run := len(order) > 0 && !s.failed && !s.destroyed
	if run {
		d.active = true
	} else {
		s.preloadLocked(d)
		d.headers.writable = false
	}
	s.mu.Unlock()
	if !run {
		return envoy.Continue
	}
	to := len(order)
	if !end && whole >= 0 {
		if max > 0 {
			if cl, ok := h.Get("content-length"); ok {
				if n, err := strconv.Atoi(cl); err == nil && n > max {
					return s.tooLarge(d, kHeaders)
				}
			}
		}
		to = whole
		s.mu.Lock()
		d.buffering = true
		s.mu.Unlock()
	}
	return s.run(d, kHeaders, false, 0, to)
}

func (s *stream) DecodeData(b envoy.BufferInstance, endStream bool) envoy.StatusType {
	return s.onData(&s.dec, b, endStream, s.ch.decData, s.ch.maxReq)
}

func (s *stream) EncodeData(b envoy.BufferInstance, endStream bool) envoy.StatusType {
	return s.onData(&s.enc, b, endStream, s.ch.encData, s.ch.maxResp)
}

func (s *stream) onData(d *side, b envoy.BufferInstance, end bool, data []int, max int) envoy.StatusType {
	s.mu.Lock()
	buffering := d.buffering
	s.mu.Unlock()
	if buffering {
		if !s.enter(d) {
			return envoy.Continue
		}
		if max > 0 && b.Len() > max {
			return s.tooLarge(d, kWhole)
		}
		// !end means trailers follow. Envoy forwards this data before it hands
		// the trailers to Go (and, when the trailers arrived while a phase was
		// async, it only delivers them after this data continued), so whole-body
		// plugins run now, with the body and without the trailers.
		s.mu.Lock()
		d.body.attach(b, true)
		s.mu.Unlock()
		return s.runWhole(d, end)
	}
	if len(data) == 0 || !s.enter(d) {
		return envoy.Continue
	}
	s.mu.Lock()
	d.body.attach(b, true)
	s.mu.Unlock()
	return s.run(d, kData, end, 0, len(data))
}

func (s *stream) DecodeTrailers(t envoy.RequestTrailerMap) envoy.StatusType {
	return s.onTrailers(&s.dec, t, s.ch.decData)
}

func (s *stream) EncodeTrailers(t envoy.ResponseTrailerMap) envoy.StatusType {
	return s.onTrailers(&s.enc, t, s.ch.encData)
}

func (s *stream) onTrailers(d *side, t envoy.HeaderMap, data []int) envoy.StatusType {
	s.mu.Lock()
	d.trailers.attach(t, true)
	buffering := d.buffering
	s.mu.Unlock()
	if buffering {
		if !s.enter(d) {
			return envoy.Continue
		}
		return s.runWhole(d, true)
	}
	if len(data) == 0 || !s.enter(d) {
		return envoy.Continue
	}
	s.mu.Lock()
	d.body.attachEmpty() // an empty, read-only last chunk
	s.mu.Unlock()
	return s.run(d, kData, true, 0, len(data))
}

func (s *stream) OnLog(reqH envoy.RequestHeaderMap, reqT envoy.RequestTrailerMap, respH envoy.ResponseHeaderMap, respT envoy.ResponseTrailerMap) {
	if len(s.ch.logs) == 0 {
		return
	}
	s.mu.Lock()
	if s.logged {
		s.mu.Unlock()
		return
	}
	s.logged = true
	// Headers given to the log phase are valid only during this call.
	if reqH != nil {
		s.dec.headers.attach(reqH, false)
	}
	if reqT != nil {
		s.dec.trailers.attach(reqT, false)
	}
	if respH != nil {
		s.enc.headers.attach(respH, false)
	}
	if respT != nil {
		s.enc.trailers.attach(respT, false)
	}
	s.dec.body.writable, s.enc.body.writable = false, false
	s.logActive = true
	s.mu.Unlock()

	s.runLogs(reqH != nil, respH != nil)

	s.mu.Lock()
	s.logActive = false
	s.mu.Unlock()
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
	for _, idx := range s.ch.logs {
		s.safeHook(idx, "Log", func(sl *slot) {
			if l := sl.filter().logger(); l != nil {
				l.Log(sl, req, resp, info)
			}
		})
	}
}

// safeHook runs a log or destroy hook; a panic there is logged and counted but
// cannot change the response any more.
func (s *stream) safeHook(idx int, what string, fn func(*slot)) {
	p := s.ch.plugins[idx]
	defer func() {
		if r := recover(); r != nil {
			if api.IsStreamError(r) {
				log.Printf(envoy.Debug, p.name, s.requestID(), "%s: %v", what, r)
				return
			}
			panicsTotal.Inc(1)
			p.panics.Inc(1)
			log.Printf(envoy.Error, p.name, s.requestID(), "panic in %s: %v\n%s", what, r, debug.Stack())
		}
	}()
	fn(&s.slots[idx])
}

func (s *stream) OnLogDownstreamStart(envoy.RequestHeaderMap) {}
func (s *stream) OnLogDownstreamPeriodic(envoy.RequestHeaderMap, envoy.RequestTrailerMap, envoy.ResponseHeaderMap, envoy.ResponseTrailerMap) {
}
func (s *stream) OnStreamComplete() {}

// OnDestroy ends the request: from now on every plugin API call fails with
// ErrDestroyed, ctx.Done() is closed, and each created filter's OnDestroy runs
// once. If Envoy never called OnLog, the access-log hooks run here (without
// headers) so they too run exactly once.
func (s *stream) OnDestroy(envoy.DestroyReason) {
	s.mu.Lock()
	if s.destroyHooksRan {
		s.mu.Unlock()
		return
	}
	s.destroyHooksRan = true
	s.destroyed = true
	if s.done != nil {
		close(s.done)
	} else {
		s.done = closedChan
	}
	runLogs := !s.logged && len(s.ch.logs) > 0
	s.logged = true
	s.mu.Unlock()
	if runLogs {
		s.runLogs(false, false)
	}
	if !s.ch.destroys {
		return
	}
	for i := range s.slots {
		if !s.slots[i].p.destroy {
			continue
		}
		// The filter is created here if the request never reached the plugin, so
		// OnDestroy runs exactly once per plugin and request.
		s.safeHook(i, "OnDestroy", func(sl *slot) {
			if d := sl.filter().destroyer(); d != nil {
				d.OnDestroy()
			}
		})
	}
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// ---- request-scoped values ----

// reqSeq numbers requests without an x-request-id, for log tags. Global
// because ids must be unique across streams; an atomic counter is all it is.
var reqSeq atomic.Uint64

// requestID reads x-request-id once (when the headers are readable) or makes
// one up, so log lines can always be tagged.
func (s *stream) requestID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reqID != "" {
		return s.reqID
	}
	h := &s.dec.headers
	if h.env != nil && !s.destroyed && s.ownedLocked() {
		if v, ok := h.env.Get("x-request-id"); ok && v != "" {
			s.reqID = v
			return v
		}
	}
	s.reqID = "moe-" + strconv.FormatUint(reqSeq.Add(1), 36)
	return s.reqID
}

func (s *stream) doneChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
	}
	return s.done
}

func (s *stream) ctxErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroyed {
		return context.Canceled
	}
	return nil
}
