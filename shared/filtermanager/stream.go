package filtermanager

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/cgo/envoyabi"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/log"
	"github.com/moeproxy/moe/shared/metrics"
)

// phaseKind is the kind of a run over the plugins of one direction.
type phaseKind uint8

const (
	kHeaders phaseKind = iota // OnReceive/Append on headers (body not needed or not buffered)
	kWhole                    // OnReceive/Append with the whole body (trailers only when there is no body)
	kData                     // OnReceiveData/AppendData on a chunk
)

type localReply struct {
	code    int
	body    string
	headers map[string][]string
	details string
}

// side is the state of one direction (decode = request, encode = response).
// Fields are ordered by size: the stream must stay within a small allocation
// size class (it is the request's one allocation).
type side struct {
	headers headerMap
	// trailers and body exist once attached or asked for (trailersLocked,
	// bodyLocked): most requests through header-only plugins need neither,
	// and inline they took a fifth of the stream (2 x 96 bytes). The bodies
	// of a chain whose plugins see them are in the stream's allocation
	// (streamBodiesWith).
	trailers *headerMap
	body     *bodyBuf
	reply    *localReply
	// cur is the plugin running now, for panic attribution. Only the goroutine
	// running the side's phase touches it.
	cur     int
	replied atomic.Bool // reply != nil, readable without the lock
	decode  bool
	// active: a phase of this side is running; the chain owns the stream.
	active bool
	// endStream: the headers ended the stream (no body follows).
	endStream bool
	// buffering: headers returned StopAndBuffer; the whole-body pass is pending.
	buffering bool
}

// trailersLocked returns d's trailers, allocating them on first use. Once
// set, d.trailers never changes, so a pointer taken under s.mu stays valid.
func (d *side) trailersLocked(s *stream) *headerMap {
	if d.trailers == nil {
		d.trailers = &headerMap{s: s, kind: reqTrailers}
		if !d.decode {
			d.trailers.kind = respTrailers
		}
	}
	return d.trailers
}

// bodyLocked returns d's body like trailersLocked.
func (d *side) bodyLocked(s *stream) *bodyBuf {
	if d.body == nil {
		d.useBody(&bodyBuf{}, s)
	}
	return d.body
}

// useBody makes b, zero, d's body (d.decode is set).
func (d *side) useBody(b *bodyBuf, s *stream) {
	b.s, b.kind = s, reqBody
	if !d.decode {
		b.kind = respBody
	}
	d.body = b
}

// hasBodyLocked reports whether a body (possibly an empty chunk) is attached.
func (d *side) hasBodyLocked() bool { return d.body != nil && d.body.present }

// dir returns the chain's precomputed direction for this side.
func (d *side) dir(c *Chain) *direction {
	if d.decode {
		return &c.dec
	}
	return &c.enc
}

// stream is the per-request filter Envoy calls (one per request).
type stream struct {
	// mu guards everything below that goroutines may touch: ownership flags,
	// header/body wrappers, request values, the chain.
	mu       sync.Mutex
	createMu sync.Mutex // serializes lazy plugin filter creation
	cb       envoy.FilterCallbackHandler
	abi      envoyabi.Request // cb at Envoy's C ABI, looked up on first use (abiLocked)
	// ch is the chain running. It changes once at most, to the chain of the
	// consumer an auth plugin identified (consumers.go), during the decode
	// phase and under mu; an atomic so that reading it takes no lock.
	ch atomic.Pointer[Chain]

	dec, enc        side
	logActive       bool
	destroyed       bool
	failed          bool // a panic reply was sent: no more plugin code for this request
	logged          bool
	destroyHooksRan bool // OnDestroy hooks ran
	// wentAsync: some phase of this request ran in a goroutine. Only the worker
	// thread sets it, once, before starting the first such goroutine; until
	// then plugin filters are created without a lock (slot.filter).
	wentAsync bool
	// consumerDirty: the consumer changed since it was last written to the
	// filter state; consumerLoaded: the consumer was set here or read from
	// the filter state (shared_state.go).
	consumerDirty, consumerLoaded bool

	done     chan struct{}
	consumer *api.Consumer
	// switchTo is the consumer chain to continue with after the running plugin
	// returns (set by SetConsumer while decoding); an atomic so that the check
	// after every plugin takes no lock.
	switchTo atomic.Pointer[Chain]
	state    map[string]any
	shared   *sharedState // nil until string state is set or read
	obs      *observation // nil until a decision or call is recorded
	tracing  atomic.Bool  // a plugin asked to time every call of this request
	reqID    string
	route    routeCache
	addrs    struct{ remote, local string } // read once (info.go)
	// startMono is when Envoy created the stream, on the monotonic clock;
	// startWall its wall-clock time in Unix nanoseconds, derived under mu when
	// first asked (clock.go).
	startMono, startWall int64

	slots []slot // in the same allocation as the stream (streamWith) up to 16
}

// streamWith is a stream allocated together with room for its plugins'
// slots, so that a request of a chain of up to 16 plugins costs one
// allocation.
type streamWith[A any] struct {
	stream
	room A
}

// streamBodiesWith is a streamWith that also holds both sides' bodies, for
// chains whose plugins see them (Chain.bodies): they would otherwise be a
// second allocation for nearly every request.
type streamBodiesWith[A any] struct {
	stream
	bodies [2]bodyBuf
	room   A
}

// allocStream returns a new stream and room for capacity slots. Sizes are in
// TestStreamFitsItsSizeClass.
func allocStream(capacity int, bodies bool) (*stream, []slot) {
	switch {
	case capacity <= 1:
		return allocWith(bodies, func(a *[1]slot) []slot { return a[:0] })
	case capacity <= 2:
		return allocWith(bodies, func(a *[2]slot) []slot { return a[:0] })
	case capacity <= 4:
		return allocWith(bodies, func(a *[4]slot) []slot { return a[:0] })
	case capacity <= 6:
		// Five or six plugins (the standard chain): 896 bytes, where room
		// for eight takes the 1024-byte size class.
		return allocWith(bodies, func(a *[6]slot) []slot { return a[:0] })
	case capacity <= 8:
		return allocWith(bodies, func(a *[8]slot) []slot { return a[:0] })
	case capacity <= 12:
		// 1280 bytes (1408 with bodies), not 16 slots' 1792.
		return allocWith(bodies, func(a *[12]slot) []slot { return a[:0] })
	case capacity <= 16:
		return allocWith(bodies, func(a *[16]slot) []slot { return a[:0] })
	}
	// More plugins than any room above: the slots are a second allocation.
	return allocWith(bodies, func(*struct{}) []slot { return make([]slot, 0, capacity) })
}

// allocWith allocates a stream with room A for slots (slice turns the room
// into an empty slice: Go cannot slice an array type parameter).
func allocWith[A any](bodies bool, slice func(*A) []slot) (*stream, []slot) {
	if bodies {
		b := new(streamBodiesWith[A])
		s := &b.stream
		s.dec.decode = true
		s.dec.useBody(&b.bodies[0], s)
		s.enc.useBody(&b.bodies[1], s)
		return s, slice(&b.room)
	}
	b := new(streamWith[A])
	b.stream.dec.decode = true
	return &b.stream, slice(&b.room)
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
	metrics.Activity() // the runtime gauges are sampled while requests flow
	// Slots are reserved for the longest consumer chain too, so switching to
	// one never moves them (plugins hold *slot as their context).
	n := len(c.plugins)
	s, room := allocStream(n+c.extraSlots, c.bodies)
	s.slots = room[:n]
	s.cb, s.startMono = cb, nanotime()
	s.ch.Store(c)
	// Field by field, not whole structs: the stream is zeroed already, and a
	// struct assignment copies a temporary with a bulk write barrier while
	// the GC marks.
	s.dec.headers.s, s.dec.headers.kind = s, reqHeaders
	s.enc.headers.s, s.enc.headers.kind = s, respHeaders
	for i := range s.slots {
		s.slots[i].s = s
		s.slots[i].p = c.plugins[i]
	}
	return s
}

// chain returns the running chain.
func (s *stream) chain() *Chain { return s.ch.Load() }

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

// handBackLocked is the end of d's headers phase: the headers leave for the
// next filter. Envoy announced their size when it handed them to Go and may
// change them from now on (the router adds request headers, the connection
// manager date and server to the response), while after an asynchronous phase
// it still lets Go copy them (state.headers is cleared only after a
// synchronous one, golang_filter.cc doHeaders) and sizes the copy by the old
// counts (copyHeaderMapToGo). So when a later phase may read them they are
// copied now, and no copy is made afterwards.
func (s *stream) handBackLocked(d *side) {
	ch := s.ch.Load()
	if d.headers.env != nil && (d.decode && ch.readsRequestLater || !d.decode && ch.readsResponseLater) {
		s.preloadLocked(&d.headers)
	}
	d.headers.writable = false
	d.headers.handedBack = true
}

// preloadLocked copies h now (see handBackLocked); one cgo call, and only if
// no plugin read it already. A copy Envoy refuses leaves the later reads to
// fail with a *StreamError: a panic here would leave the stream locked.
func (s *stream) preloadLocked(h *headerMap) {
	defer func() {
		if r := recover(); r != nil && !api.IsStreamError(r) {
			log.Printf(envoy.Error, "", s.reqID, "copying %s: %v", h.kind, r)
		}
	}()
	h.preloadLocked()
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

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
	if v := s.headerRequestIDLocked(); v != "" {
		s.reqID = v
		return v
	}
	s.reqID = "moe-" + strconv.FormatUint(reqSeq.Add(1), 36)
	return s.reqID
}

// headerRequestIDLocked is x-request-id when the request headers can be read.
// Log lines are tagged with it, also from panic handlers: a failed read is no
// id, never a panic.
func (s *stream) headerRequestIDLocked() (id string) {
	h := &s.dec.headers
	if h.env == nil || s.destroyed || !s.ownedLocked() {
		return ""
	}
	defer func() {
		if recover() != nil {
			id = ""
		}
	}()
	id, _ = h.firstLocked("x-request-id")
	return id
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
