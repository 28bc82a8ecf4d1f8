package filtermanager

import (
	"sync/atomic"
	"time"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/log"
	"github.com/moeproxy/moe/shared/variables"
)

// filters caches the typed interfaces of a created plugin filter. The hot
// ones are kept typed; the rest are asserted when used (rare phases), which
// keeps the per-request slot small.
type filters struct {
	recv api.ReceiverFilter
	send api.SenderFilter
	f    any
}

func (f *filters) recvData() api.StreamingReceiver { v, _ := f.f.(api.StreamingReceiver); return v }
func (f *filters) sendData() api.StreamingSender   { v, _ := f.f.(api.StreamingSender); return v }
func (f *filters) logger() api.AccessLogger        { v, _ := f.f.(api.AccessLogger); return v }
func (f *filters) destroyer() api.Destroyer        { v, _ := f.f.(api.Destroyer); return v }

// slot is one plugin of one request. *slot is the plugin's api.Context; its
// conversions *recvHandler and *sendHandler are the two handlers. Keeping them
// in one array inside the stream means a request costs no allocation per plugin.
type slot struct {
	s     *stream
	p     *plugin
	ready atomic.Bool // f is set; read without the lock on the hot path
	f     filters
}

// filter creates the plugin's filter on first use. The decode goroutine and the
// worker thread (encode) may race to create it, hence the lock.
func (sl *slot) filter() *filters {
	if sl.ready.Load() {
		return &sl.f
	}
	s := sl.s
	// A lock of its own (not s.mu): the factory and handler setters are plugin
	// code and may call stream methods.
	s.createMu.Lock()
	defer s.createMu.Unlock()
	if !sl.ready.Load() {
		f := sl.p.factory(sl.p.config)
		sl.f.f = f
		sl.f.recv, _ = f.(api.ReceiverFilter)
		sl.f.send, _ = f.(api.SenderFilter)
		if hs, ok := f.(api.ReceiverHandlerSetter); ok {
			hs.SetReceiveFilterHandler((*recvHandler)(sl))
		}
		if hs, ok := f.(api.SenderHandlerSetter); ok {
			hs.SetSenderFilterHandler((*sendHandler)(sl))
		}
		sl.ready.Store(true)
	}
	return &sl.f
}

// ---- api.Context ----

func (sl *slot) Deadline() (time.Time, bool)         { return time.Time{}, false }
func (sl *slot) Done() <-chan struct{}               { return sl.s.doneChan() }
func (sl *slot) Err() error                          { return sl.s.ctxErr() }
func (sl *slot) Value(any) any                       { return nil }
func (sl *slot) PluginName() string                  { return sl.p.name }
func (sl *slot) RequestID() string                   { return sl.s.requestID() }
func (sl *slot) Log() api.Logger                     { return slotLogger{sl} }
func (sl *slot) Receiver() api.ReceiverFilterHandler { return (*recvHandler)(sl) }
func (sl *slot) Sender() api.SenderFilterHandler     { return (*sendHandler)(sl) }
func (sl *slot) Var(name string) (string, bool)      { return variables.Lookup(sl, name) }

func (sl *slot) Reply(code int, body string, headers api.HeaderMap) api.Status {
	s := sl.s
	d := &s.dec
	s.mu.Lock()
	// Both sides can be active at once (a response arrives while a request-body
	// phase still runs in a goroutine): the side running this plugin answers.
	if s.enc.active && (!s.dec.active || s.enc.cur == sl.index()) {
		d = &s.enc
	}
	s.mu.Unlock()
	if err := s.setReply(d, sl.p.name, code, headers, body); err != nil {
		log.Printf(envoy.Debug, sl.p.name, s.requestID(), "reply %d not sent: %v", code, err)
	}
	return api.Stop
}

// index is the slot's position in the stream's slot array.
func (sl *slot) index() int {
	for i := range sl.s.slots {
		if &sl.s.slots[i] == sl {
			return i
		}
	}
	return -1
}

func (sl *slot) Consumer() *api.Consumer {
	sl.s.mu.Lock()
	defer sl.s.mu.Unlock()
	return sl.s.consumer
}

func (sl *slot) SetConsumer(c *api.Consumer) {
	sl.s.mu.Lock()
	defer sl.s.mu.Unlock()
	sl.s.consumer = c
}

func (sl *slot) GetState(key string) (any, bool) {
	sl.s.mu.Lock()
	defer sl.s.mu.Unlock()
	v, ok := sl.s.state[key]
	return v, ok
}

func (sl *slot) SetState(key string, value any) {
	sl.s.mu.Lock()
	defer sl.s.mu.Unlock()
	if sl.s.state == nil {
		sl.s.state = make(map[string]any, 4)
	}
	sl.s.state[key] = value
}

type slotLogger struct{ sl *slot }

func (l slotLogger) logf(level envoy.LogType, format string, args []any) {
	if !log.Enabled(level) {
		return
	}
	log.Printf(level, l.sl.p.name, l.sl.s.requestID(), format, args...)
}
func (l slotLogger) Debugf(format string, args ...any) { l.logf(envoy.Debug, format, args) }
func (l slotLogger) Infof(format string, args ...any)  { l.logf(envoy.Info, format, args) }
func (l slotLogger) Warnf(format string, args ...any)  { l.logf(envoy.Warn, format, args) }
func (l slotLogger) Errorf(format string, args ...any) { l.logf(envoy.Error, format, args) }

// ---- handlers ----

type recvHandler slot
type sendHandler slot

func (s *stream) checkLocked(op string) error {
	switch {
	case s.destroyed:
		return &api.StreamError{Op: op, Err: api.ErrDestroyed}
	case !s.ownedLocked():
		return &api.StreamError{Op: op, Err: api.ErrReleased}
	}
	return nil
}

func (s *stream) check(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkLocked(op)
}

func toHeaderMap(h api.HeaderMap) map[string][]string {
	if h == nil {
		return nil
	}
	out := make(map[string][]string, 4)
	h.Range(func(k, v string) bool {
		k = api.LowerKey(k)
		out[k] = append(out[k], v)
		return true
	})
	return out
}

// setReply records a local reply; it is sent when the plugin returns.
func (s *stream) setReply(d *side, plugin string, code int, headers api.HeaderMap, body string) error {
	hm := toHeaderMap(headers) // plugin code (Range) runs outside our lock
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "SendHijackReply"
	if err := s.checkLocked(op); err != nil {
		return err
	}
	if !d.active {
		return &api.StreamError{Op: op, Err: api.ErrReleased}
	}
	if d.reply != nil {
		return &api.StreamError{Op: op, Err: api.ErrAlreadyReplied}
	}
	delete(hm, ":status")
	d.reply = &localReply{code: code, body: body, headers: hm, details: "moe_reply{" + plugin + "}"}
	d.replied.Store(true)
	return nil
}

func (h *recvHandler) sl() *slot { return (*slot)(h) }

func (h *recvHandler) SendHijackReply(code int, headers api.HeaderMap) error {
	return h.s.setReply(&h.s.dec, h.p.name, code, headers, "")
}
func (h *recvHandler) SendHijackReplyWithBody(code int, headers api.HeaderMap, body string) error {
	return h.s.setReply(&h.s.dec, h.p.name, code, headers, body)
}
func (h *recvHandler) SendDirectResponse(headers api.HeaderMap, body api.Buffer, trailers api.HeaderMap) error {
	if trailers != nil && trailers.Len() > 0 {
		return &api.StreamError{Op: "SendDirectResponse trailers", Err: api.ErrUnavailable}
	}
	code := 200
	if headers != nil {
		if v, ok := headers.Get(":status"); ok {
			if n, err := atoiStatus(v); err == nil {
				code = n
			}
		}
	}
	b := ""
	if body != nil {
		b = body.String()
	}
	return h.s.setReply(&h.s.dec, h.p.name, code, headers, b)
}

// getHeaders returns m as an interface, or nil if the side has none yet.
func (s *stream) headersOf(m *headerMap, op string) *headerMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(op); err != nil {
		panic(err)
	}
	if m.env == nil {
		return nil
	}
	return m
}

func (h *recvHandler) GetRequestHeaders() api.RequestHeaderMap {
	if m := h.s.headersOf(&h.s.dec.headers, "GetRequestHeaders"); m != nil {
		return m
	}
	return nil
}
func (h *recvHandler) SetRequestHeaders(src api.HeaderMap) error {
	return h.s.dec.headers.replaceAll(src)
}
func (h *recvHandler) GetRequestData() api.Buffer { return h.s.bodyOf(&h.s.dec.body, "GetRequestData") }
func (h *recvHandler) SetRequestData(b api.Buffer) error {
	return setBody(&h.s.dec.body, b)
}
func (h *recvHandler) GetRequestTrailers() api.HeaderMap {
	if m := h.s.headersOf(&h.s.dec.trailers, "GetRequestTrailers"); m != nil {
		return m
	}
	return nil
}
func (h *recvHandler) SetRequestTrailers(t api.HeaderMap) error {
	return h.s.dec.trailers.replaceAll(t)
}
func (h *recvHandler) RequestInfo() api.RequestInfo { return (*reqInfo)(h.s) }
func (h *recvHandler) Route() api.RouteInfo         { return (*routeInfo)(h.s) }

func (h *recvHandler) ClearRouteCache() error {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked("ClearRouteCache"); err != nil {
		return err
	}
	s.dec.headers.flushLocked()
	s.dec.headers.routeDirty = false
	s.route = routeCache{}
	s.cb.ClearRouteCache() // posts from a goroutine, never waits: fine under the lock
	return nil
}

func (h *recvHandler) SetUpstreamOverrideHost(host string, strict bool) error {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked("SetUpstreamOverrideHost"); err != nil {
		return err
	}
	if !s.dec.active {
		return &api.StreamError{Op: "SetUpstreamOverrideHost", Err: api.ErrUnavailable}
	}
	return s.cb.DecoderFilterCallbacks().SetUpstreamOverrideHost(host, strict)
}

func (s *stream) bodyOf(b *bodyBuf, op string) api.Buffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(op); err != nil {
		panic(err)
	}
	if !b.present {
		return nil
	}
	return b
}

func setBody(b *bodyBuf, src api.Buffer) error {
	var data []byte
	if src != nil {
		data = src.Bytes()
	}
	return b.Set(data)
}

func (h *sendHandler) GetResponseHeaders() api.ResponseHeaderMap {
	if m := h.s.headersOf(&h.s.enc.headers, "GetResponseHeaders"); m != nil {
		return m
	}
	return nil
}
func (h *sendHandler) SetResponseHeaders(src api.HeaderMap) error {
	return h.s.enc.headers.replaceAll(src)
}
func (h *sendHandler) GetResponseData() api.Buffer {
	return h.s.bodyOf(&h.s.enc.body, "GetResponseData")
}
func (h *sendHandler) SetResponseData(b api.Buffer) error {
	return setBody(&h.s.enc.body, b)
}
func (h *sendHandler) GetResponseTrailers() api.HeaderMap {
	if m := h.s.headersOf(&h.s.enc.trailers, "GetResponseTrailers"); m != nil {
		return m
	}
	return nil
}
func (h *sendHandler) SetResponseTrailers(t api.HeaderMap) error {
	return h.s.enc.trailers.replaceAll(t)
}
func (h *sendHandler) GetRequestHeaders() api.RequestHeaderMap {
	return (*recvHandler)(h).GetRequestHeaders()
}
func (h *sendHandler) RequestInfo() api.RequestInfo { return (*reqInfo)(h.s) }
func (h *sendHandler) Route() api.RouteInfo         { return (*routeInfo)(h.s) }
func (h *sendHandler) SendHijackReply(code int, headers api.HeaderMap) error {
	return h.s.setReply(&h.s.enc, h.p.name, code, headers, "")
}
func (h *sendHandler) SendHijackReplyWithBody(code int, headers api.HeaderMap, body string) error {
	return h.s.setReply(&h.s.enc, h.p.name, code, headers, body)
}
