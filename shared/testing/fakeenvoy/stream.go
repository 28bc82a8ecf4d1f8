package fakeenvoy

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"
)

// Request describes what the client sends and how the rest of the fake Envoy
// behaves.
type Request struct {
	Method, Path, Authority, Scheme string // defaults GET, /, example.com, http
	Headers                         [][2]string
	Body                            []string // chunks; none = headers-only request
	Trailers                        [][2]string
	// RouteName/Cluster are what route matching found. Router, if set, is used
	// instead, at start and after every route-cache clear.
	RouteName, Cluster string
	Router             func(h map[string][]string) (route, cluster string)
	RemoteAddr         string // default 10.0.0.1:12345
	Protocol           string // default HTTP/1.1
	// Upstream produces the response (nil: 200 "ok").
	Upstream func(u *Upstream) Response
	// AbortAt makes the client go away right after the filter method of this
	// phase returns (Envoy then logs and destroys the stream with Terminate).
	AbortAt Phase
	// Timeout bounds the wait for an async Continue (default 5s).
	Timeout time.Duration
	// Properties answers GetProperty (besides xds.route_name/xds.cluster_name).
	Properties map[string]string
	// FilterState is the stream's filter state when the filter starts, as an
	// earlier filter of the request (another golang filter) left it.
	FilterState map[string]string
}

// Phase names a filter callback.
type Phase int

const (
	NoPhase Phase = iota
	DecodeHeaders
	DecodeData
	DecodeTrailers
	EncodeHeaders
	EncodeData
	EncodeTrailers
)

// Upstream is what reached the upstream.
type Upstream struct {
	Headers  map[string][]string
	Body     string
	Trailers map[string][]string
	// OverrideHost is what SetUpstreamOverrideHost set.
	OverrideHost string
	Route        string
	Cluster      string
}

// Response is the upstream's response.
type Response struct {
	Status   int
	Headers  [][2]string
	Body     []string
	Trailers [][2]string
}

// LocalReply is a recorded SendLocalReply.
type LocalReply struct {
	Code    int
	Body    string
	Headers map[string][]string
	Details string
	// Encoding: sent while encoding (goes straight to the client).
	Encoding bool
}

// Result is what happened.
type Result struct {
	// What the client received (Status 0: nothing, e.g. aborted).
	Status   int
	Headers  map[string][]string
	Body     string
	Trailers map[string][]string

	LocalReply *LocalReply
	Upstream   *Upstream

	// SDK-level counters.
	HeaderCopies int // header/trailer map copies from "Envoy" (first read of a phase object)
	HeaderWrites int // Set/Add/Del calls that reached "Envoy"
	BodyCopies   int
	BodyWrites   int
	RouteClears  int
	Continues    int // async Continue calls
	// FilterState is the stream's filter state at the end (what a later
	// filter of the request would see); FilterStateReads/Writes count the
	// SDK calls.
	FilterState       map[string]string
	FilterStateReads  int
	FilterStateWrites int
	Statuses          []string

	// Violations: SDK use Envoy would refuse (not processing in Go, after
	// destroy, wrong phase). Must be empty.
	Violations []string

	st        *stream
	Logged    bool
	Destroyed bool
	Aborted   bool
}

type event struct {
	status envoy.StatusType
	reply  *LocalReply
}

type fside struct {
	decode   bool
	inGo     bool
	headers  map[string][]string // canonical ("in Envoy")
	trailers map[string][]string
	// headersHeld: headers not yet forwarded (Go may still change them).
	headersHeld bool
	events      chan event
	added       []byte // AddData
	waiting     bool   // Running: waiting for Continue
}

// stream is the fake Envoy side of one request; it implements the SDK's
// FilterCallbackHandler and StreamInfo.
type stream struct {
	mu        sync.Mutex
	req       *Request
	res       *Result
	dec, enc  fside
	inLog     bool
	destroyed bool
	route     string
	cluster   string
	override  string
	fstate    map[string]string
	filter    envoy.StreamFilter
	decCB     procCB
	encCB     procCB
	// written by goroutines that may outlive Do: read through Result.Late.
	violations []string
	continues  int
}

func (st *stream) violation(format string, args ...any) {
	st.violations = append(st.violations, fmt.Sprintf(format, args...))
}

// Late returns the violations and async Continue count including what
// goroutines did after Do returned (a goroutine that outlived its request).
func (r *Result) Late() (violations []string, continues int) {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	return append([]string(nil), r.st.violations...), r.st.continues
}

// checkLocked emulates the C side's checks for side-bound calls.
func (st *stream) checkLocked(sd *fside, what string) {
	if st.destroyed {
		st.violation("%s after destroy", what)
		panic("golang filter has been destroyed")
	}
	if !sd.inGo && !st.inLog {
		st.violation("%s while not processing in Go", what)
		panic("not proccessing Go")
	}
}

func hmap(pairs [][2]string) map[string][]string {
	m := map[string][]string{}
	for _, p := range pairs {
		k := strings.ToLower(p[0])
		m[k] = append(m[k], p[1])
	}
	return m
}

func cloneMap(m map[string][]string) map[string][]string {
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// Do runs one request through a filter built by factory from cfg.
func Do(factory envoy.StreamFilterFactory, cfg any, req Request) *Result {
	r := req
	if r.Method == "" {
		r.Method = "GET"
	}
	if r.Path == "" {
		r.Path = "/"
	}
	if r.Authority == "" {
		r.Authority = "example.com"
	}
	if r.Scheme == "" {
		r.Scheme = "http"
	}
	if r.RemoteAddr == "" {
		r.RemoteAddr = "10.0.0.1:12345"
	}
	if r.Protocol == "" {
		r.Protocol = "HTTP/1.1"
	}
	if r.Timeout == 0 {
		r.Timeout = 5 * time.Second
	}
	st := &stream{req: &r, res: &Result{}}
	st.dec = fside{decode: true, events: make(chan event, 4)}
	st.enc = fside{events: make(chan event, 4)}
	st.decCB = procCB{sd: &st.dec, st: st}
	st.encCB = procCB{sd: &st.enc, st: st}
	st.dec.headers = hmap(append([][2]string{{":method", r.Method}, {":path", r.Path}, {":authority", r.Authority}, {":scheme", r.Scheme}}, r.Headers...))
	st.route, st.cluster = r.RouteName, r.Cluster
	st.fstate = maps.Clone(r.FilterState)
	if st.fstate == nil {
		st.fstate = map[string]string{}
	}
	if r.Router != nil {
		st.route, st.cluster = r.Router(st.dec.headers)
	}
	st.filter = factory(cfg, st)
	st.res.st = st
	st.run()
	st.mu.Lock()
	st.res.Violations = append([]string(nil), st.violations...)
	st.res.Continues = st.continues
	st.res.FilterState = maps.Clone(st.fstate)
	st.mu.Unlock()
	return st.res
}

func (st *stream) statusName(s envoy.StatusType) string {
	switch s {
	case envoy.Running:
		return "Running"
	case envoy.LocalReply:
		return "LocalReply"
	case envoy.Continue:
		return "Continue"
	case envoy.StopAndBuffer:
		return "StopAndBuffer"
	case envoy.StopAndBufferWatermark:
		return "StopAndBufferWatermark"
	case envoy.StopNoBuffer:
		return "StopNoBuffer"
	}
	return strconv.Itoa(int(s))
}

var errAborted = errors.New("aborted")

// call runs one filter callback like Envoy: mark the side processing in Go,
// call, and for Running/LocalReply wait for the posted Continue or local reply.
func (st *stream) call(sd *fside, ph Phase, fn func() envoy.StatusType) (envoy.StatusType, *LocalReply, error) {
	st.mu.Lock()
	sd.inGo = true
	st.mu.Unlock()
	s := fn()
	st.mu.Lock()
	st.res.Statuses = append(st.res.Statuses, fmt.Sprintf("%d:%s", ph, st.statusName(s)))
	if s == envoy.Running {
		sd.waiting = true
	}
	st.mu.Unlock()
	if st.req.AbortAt == ph {
		st.abort()
		return 0, nil, errAborted
	}
	if s == envoy.Running || s == envoy.LocalReply {
		select {
		case ev := <-sd.events:
			st.mu.Lock()
			sd.inGo, sd.waiting = false, false
			st.mu.Unlock()
			if ev.reply != nil {
				return envoy.LocalReply, ev.reply, nil
			}
			return ev.status, nil, nil
		case <-time.After(st.req.Timeout):
			st.mu.Lock()
			st.violation("phase %d: no Continue/SendLocalReply within %v after %s", ph, st.req.Timeout, st.statusName(s))
			st.mu.Unlock()
			st.abort()
			return 0, nil, errAborted
		}
	}
	st.mu.Lock()
	sd.inGo = false
	if len(sd.events) > 0 {
		st.violation("phase %d: Continue called although the phase returned %s", ph, st.statusName(s))
		<-sd.events
	}
	st.mu.Unlock()
	return s, nil, nil
}

func (st *stream) abort() {
	st.mu.Lock()
	st.res.Aborted = true
	st.mu.Unlock()
	st.finishStream(envoy.Terminate)
}

func (st *stream) run() {
	req := st.req
	body, ok := st.pass(&st.dec, req.Body, req.Trailers)
	if !ok {
		return
	}
	st.mu.Lock()
	up := &Upstream{Headers: cloneMap(st.dec.headers), Body: string(body), OverrideHost: st.override, Route: st.route, Cluster: st.cluster}
	if st.dec.trailers != nil {
		up.Trailers = cloneMap(st.dec.trailers)
	}
	st.res.Upstream = up
	st.mu.Unlock()

	resp := Response{Status: 200, Body: []string{"ok"}}
	if req.Upstream != nil {
		resp = req.Upstream(up)
	}
	if resp.Status == 0 {
		resp.Status = 200
	}
	st.encode(resp)
}

// direction is what differs between decoding and encoding: the filter's
// callbacks and the phase names. Everything else (buffering, streaming,
// trailers, local replies) is the same code, as in Envoy's filter manager.
type direction struct {
	headers       func(h *headerObj, end bool) envoy.StatusType
	data          func(b *buf, end bool) envoy.StatusType
	trailers      func(t *headerObj) envoy.StatusType
	phH, phD, phT Phase
}

func (st *stream) direction(sd *fside) direction {
	if sd.decode {
		return direction{
			headers:  func(h *headerObj, end bool) envoy.StatusType { return st.filter.DecodeHeaders(h, end) },
			data:     func(b *buf, end bool) envoy.StatusType { return st.filter.DecodeData(b, end) },
			trailers: func(t *headerObj) envoy.StatusType { return st.filter.DecodeTrailers(t) },
			phH:      DecodeHeaders, phD: DecodeData, phT: DecodeTrailers,
		}
	}
	return direction{
		headers:  func(h *headerObj, end bool) envoy.StatusType { return st.filter.EncodeHeaders(h, end) },
		data:     func(b *buf, end bool) envoy.StatusType { return st.filter.EncodeData(b, end) },
		trailers: func(t *headerObj) envoy.StatusType { return st.filter.EncodeTrailers(t) },
		phH:      EncodeHeaders, phD: EncodeData, phT: EncodeTrailers,
	}
}

// pass runs one direction's headers (already in sd.headers), body chunks and
// trailers through the filter like Envoy: StopAndBuffer collects the whole
// body into one data call; otherwise each chunk is a call of its own; a
// local reply ends the pass. It returns the body that left the filter, and
// false when the stream ended here (a local reply or an abort).
func (st *stream) pass(sd *fside, chunks []string, trailers [][2]string) ([]byte, bool) {
	d := st.direction(sd)
	hasBody, hasTrailers := len(chunks) > 0, len(trailers) > 0
	// step runs one callback; false: the pass ends (reply sent, or aborted).
	step := func(ph Phase, fn func() envoy.StatusType) (envoy.StatusType, bool) {
		s, reply, err := st.call(sd, ph, fn)
		if err != nil {
			return s, false
		}
		if reply != nil {
			st.localReply(reply, !sd.decode)
			return s, false
		}
		return s, true
	}
	st.mu.Lock()
	sd.headersHeld = true
	st.mu.Unlock()
	hobj := newHeaderObj(st, sd, false, false)
	s, ok := step(d.phH, func() envoy.StatusType { return d.headers(hobj, !hasBody && !hasTrailers) })
	if !ok {
		return nil, false
	}
	var body []byte
	buffered := s == envoy.StopAndBuffer || s == envoy.StopAndBufferWatermark
	switch {
	case buffered && !hasBody && hasTrailers:
		// Nothing was buffered: Envoy hands the trailers over without a data
		// call (Filter::doTrailer, WaitingAllData with an empty buffer,
		// contrib/golang/filters/http/source/golang_filter.cc).
	case buffered:
		buf := newBuf(st, sd, []byte(strings.Join(chunks, "")))
		s, ok = step(d.phD, func() envoy.StatusType { return d.data(buf, !hasTrailers) })
		if !ok {
			return nil, false
		}
		// With trailers to come, StopNoBuffer drops this data.
		if !(hasTrailers && s == envoy.StopNoBuffer) {
			body = append(body, buf.snapshot()...)
		}
	default:
		st.mu.Lock()
		sd.headersHeld = false
		st.mu.Unlock()
		for i, chunk := range chunks {
			end := i == len(chunks)-1 && !hasTrailers
			buf := newBuf(st, sd, []byte(chunk))
			if _, ok = step(d.phD, func() envoy.StatusType { return d.data(buf, end) }); !ok {
				return nil, false
			}
			body = append(body, buf.snapshot()...)
		}
	}
	if hasTrailers {
		st.mu.Lock()
		sd.trailers = hmap(trailers)
		st.mu.Unlock()
		tobj := newHeaderObj(st, sd, true, false)
		if _, ok = step(d.phT, func() envoy.StatusType { return d.trailers(tobj) }); !ok {
			return nil, false
		}
	}
	st.mu.Lock()
	sd.headersHeld = false
	body = append(body, sd.added...)
	st.mu.Unlock()
	return body, true
}

// localReply emulates Envoy's sendLocalReply: from the decode path the reply
// runs through the encoder filters (this filter included); while encoding it
// goes straight to the client.
func (st *stream) localReply(r *LocalReply, encoding bool) {
	st.mu.Lock()
	r.Encoding = encoding
	st.res.LocalReply = r
	st.dec.headersHeld = false
	st.mu.Unlock()
	if encoding {
		st.mu.Lock()
		st.res.Status = r.Code
		st.res.Headers = cloneMap(r.Headers)
		st.res.Body = r.Body
		st.mu.Unlock()
		st.finishStream(envoy.Normal)
		return
	}
	hs := [][2]string{}
	for k, vs := range r.Headers {
		for _, v := range vs {
			hs = append(hs, [2]string{k, v})
		}
	}
	if r.Body != "" {
		hs = append(hs, [2]string{"content-type", "text/plain"}, [2]string{"content-length", strconv.Itoa(len(r.Body))})
	}
	resp := Response{Status: r.Code, Headers: hs}
	if r.Body != "" {
		resp.Body = []string{r.Body}
	}
	st.encode(resp)
}

// encode runs a response (from the upstream or a local reply) through the
// filter and records what the client gets.
func (st *stream) encode(resp Response) {
	st.mu.Lock()
	st.enc.headers = hmap(append([][2]string{{":status", strconv.Itoa(resp.Status)}}, resp.Headers...))
	st.mu.Unlock()
	body, ok := st.pass(&st.enc, resp.Body, resp.Trailers)
	if !ok {
		return
	}
	st.mu.Lock()
	st.res.Status, _ = strconv.Atoi(first(st.enc.headers[":status"]))
	st.res.Headers = cloneMap(st.enc.headers)
	st.res.Body = string(body)
	if st.enc.trailers != nil {
		st.res.Trailers = cloneMap(st.enc.trailers)
	}
	st.mu.Unlock()
	st.finishStream(envoy.Normal)
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// finishStream is Envoy's end of stream: stream complete, access log, destroy.
func (st *stream) finishStream(reason envoy.DestroyReason) {
	st.mu.Lock()
	if st.destroyed || st.res.Logged {
		st.mu.Unlock()
		return
	}
	st.res.Logged = true
	st.inLog = true
	st.mu.Unlock()
	st.filter.OnStreamComplete()
	reqH := newHeaderObj(st, &st.dec, false, true)
	var reqT envoy.RequestTrailerMap
	var respH envoy.ResponseHeaderMap
	var respT envoy.ResponseTrailerMap
	st.mu.Lock()
	if st.dec.trailers != nil {
		reqT = newHeaderObj(st, &st.dec, true, true)
	}
	if st.enc.headers != nil {
		respH = newHeaderObj(st, &st.enc, false, true)
	}
	if st.enc.trailers != nil {
		respT = newHeaderObj(st, &st.enc, true, true)
	}
	st.mu.Unlock()
	st.filter.OnLog(reqH, reqT, respH, respT)
	st.mu.Lock()
	st.inLog = false
	st.destroyed = true
	st.res.Destroyed = true
	st.mu.Unlock()
	st.filter.OnDestroy(reason)
}

// ---- envoy.FilterCallbackHandler ----

func (st *stream) StreamInfo() envoy.StreamInfo { return (*streamInfo)(st) }

func (st *stream) ClearRouteCache() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		st.violation("ClearRouteCache after destroy")
		panic("golang filter has been destroyed")
	}
	st.res.RouteClears++
}

// RefreshRouteCache clears and matches the route again now. A plain
// ClearRouteCache, as in Envoy, leaves the stream info answering the old
// route until something resolves it (the router: see run).
func (st *stream) RefreshRouteCache() {
	st.ClearRouteCache()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.req.Router != nil {
		st.route, st.cluster = st.req.Router(st.dec.headers)
	}
}
func (st *stream) Log(level envoy.LogType, msg string) { logs.Log(level, msg) }
func (st *stream) LogLevel() envoy.LogType             { return logs.LogLevel() }

func (st *stream) GetProperty(key string) (string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		st.violation("GetProperty after destroy")
		panic("golang filter has been destroyed")
	}
	switch key {
	case "xds.route_name":
		return st.route, nil
	case "xds.cluster_name":
		if st.cluster == "" {
			return "", envoy.ErrValueNotFound
		}
		return st.cluster, nil
	}
	if v, ok := st.req.Properties[key]; ok {
		return v, nil
	}
	return "", envoy.ErrValueNotFound
}

func (st *stream) SecretManager() envoy.SecretManager { return secrets{} }

type secrets struct{}

func (secrets) GetGenericSecret(string) (string, bool) { return "", false }

func (st *stream) DecoderFilterCallbacks() envoy.DecoderFilterCallbacks { return &st.decCB }
func (st *stream) EncoderFilterCallbacks() envoy.EncoderFilterCallbacks { return &st.encCB }

// procCB implements the SDK's decoder/encoder process callbacks.
type procCB struct {
	sd *fside
	st *stream
}

func (p *procCB) Continue(s envoy.StatusType) {
	st := p.st
	st.mu.Lock()
	if st.destroyed {
		st.mu.Unlock()
		// The SDK panics with errFilterDestroyed; the framework must recover it.
		panic("golang filter has been destroyed")
	}
	if !p.sd.inGo {
		st.violation("Continue(%s) while not processing in Go", st.statusName(s))
		st.mu.Unlock()
		return
	}
	st.continues++
	st.mu.Unlock()
	p.sd.events <- event{status: s}
}

func (p *procCB) SendLocalReply(code int, body string, headers map[string][]string, grpc int64, details string) {
	st := p.st
	st.mu.Lock()
	if st.destroyed {
		st.mu.Unlock()
		panic("golang filter has been destroyed")
	}
	if !p.sd.inGo {
		st.violation("SendLocalReply while not processing in Go")
		st.mu.Unlock()
		return
	}
	p.sd.waiting = false
	st.mu.Unlock()
	p.sd.events <- event{reply: &LocalReply{Code: code, Body: body, Headers: cloneMap(headers), Details: details}}
}

func (p *procCB) RecoverPanic() {}

func (p *procCB) AddData(data []byte, streaming bool) {
	st := p.st
	st.mu.Lock()
	defer st.mu.Unlock()
	st.checkLocked(p.sd, "AddData")
	p.sd.added = append(p.sd.added, data...)
}

func (p *procCB) InjectData(data []byte) {
	st := p.st
	st.mu.Lock()
	defer st.mu.Unlock()
	st.checkLocked(p.sd, "InjectData")
	p.sd.added = append(p.sd.added, data...)
}

func (p *procCB) SetUpstreamOverrideHost(host string, strict bool) error {
	st := p.st
	st.mu.Lock()
	defer st.mu.Unlock()
	st.checkLocked(p.sd, "SetUpstreamOverrideHost")
	if !p.sd.decode {
		st.violation("SetUpstreamOverrideHost while encoding")
		panic("invalid phase")
	}
	h := host
	if i := strings.LastIndexByte(h, ':'); i > 0 && !strings.Contains(h[:i], ":") {
		h = h[:i]
	}
	if !isIP(h) {
		return envoy.ErrInvalidIPAddress
	}
	st.override = host
	return nil
}

func isIP(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return strings.Contains(s, ":") // IPv6, loosely
	}
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 {
			return false
		}
	}
	return true
}
