package filtermanager

import (
	"github.com/moeproxy/moe/shared/api"
)

// The MOSN-style handlers a plugin gets (ctx.Receiver(), ctx.Sender(), or
// SetReceiveFilterHandler/SetSenderFilterHandler): conversions of its slot,
// so handing them out allocates nothing. Every call checks that the chain owns
// the stream (ErrReleased, ErrDestroyed otherwise).

var (
	_ api.ReceiverFilterHandler = (*recvHandler)(nil)
	_ api.SenderFilterHandler   = (*sendHandler)(nil)
)

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
	s.decideLocked(api.Decision{Plugin: plugin, Allowed: false, Reason: replyReason(body), Status: code})
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

// headersOf returns d's headers (or trailers), or nil if the side has none
// yet.
func (s *stream) headersOf(d *side, trailers bool, op string) *headerMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(op); err != nil {
		panic(err)
	}
	m := &d.headers
	if trailers {
		if d.trailers == nil {
			return nil
		}
		m = d.trailers
	}
	if m.env == nil {
		return nil
	}
	return m
}

func (h *recvHandler) GetRequestHeaders() api.RequestHeaderMap {
	if m := h.s.headersOf(&h.s.dec, false, "GetRequestHeaders"); m != nil {
		return m
	}
	return nil
}
func (h *recvHandler) SetRequestHeaders(src api.HeaderMap) error {
	return h.s.dec.headers.replaceAll(src)
}
func (h *recvHandler) GetRequestData() api.Buffer { return h.s.bodyOf(&h.s.dec, "GetRequestData") }
func (h *recvHandler) SetRequestData(b api.Buffer) error {
	return setBody(h.s.bodyForWrite(&h.s.dec), b)
}
func (h *recvHandler) GetRequestTrailers() api.HeaderMap {
	if m := h.s.headersOf(&h.s.dec, true, "GetRequestTrailers"); m != nil {
		return m
	}
	return nil
}
func (h *recvHandler) SetRequestTrailers(t api.HeaderMap) error {
	return h.s.trailersForWrite(&h.s.dec).replaceAll(t)
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
	// Refresh, not a plain clear: later plugins read the new route's name and
	// cluster. From a goroutine the SDK posts it and does not wait (fine under
	// the lock); a later GetProperty from the same goroutine is posted after it.
	s.cb.RefreshRouteCache()
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

func (s *stream) bodyOf(d *side, op string) api.Buffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(op); err != nil {
		panic(err)
	}
	if !d.hasBodyLocked() {
		return nil
	}
	return d.body
}

// trailersForWrite and bodyForWrite return d's trailers and body for a write
// through a handler, which then checks under the lock that they are there.
func (s *stream) trailersForWrite(d *side) *headerMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	return d.trailersLocked(s)
}

func (s *stream) bodyForWrite(d *side) *bodyBuf {
	s.mu.Lock()
	defer s.mu.Unlock()
	return d.bodyLocked(s)
}

func setBody(b *bodyBuf, src api.Buffer) error {
	var data []byte
	if src != nil {
		data = src.Bytes()
	}
	return b.Set(data)
}

func (h *sendHandler) GetResponseHeaders() api.ResponseHeaderMap {
	if m := h.s.headersOf(&h.s.enc, false, "GetResponseHeaders"); m != nil {
		return m
	}
	return nil
}
func (h *sendHandler) SetResponseHeaders(src api.HeaderMap) error {
	return h.s.enc.headers.replaceAll(src)
}
func (h *sendHandler) GetResponseData() api.Buffer {
	return h.s.bodyOf(&h.s.enc, "GetResponseData")
}
func (h *sendHandler) SetResponseData(b api.Buffer) error {
	return setBody(h.s.bodyForWrite(&h.s.enc), b)
}
func (h *sendHandler) GetResponseTrailers() api.HeaderMap {
	if m := h.s.headersOf(&h.s.enc, true, "GetResponseTrailers"); m != nil {
		return m
	}
	return nil
}
func (h *sendHandler) SetResponseTrailers(t api.HeaderMap) error {
	return h.s.trailersForWrite(&h.s.enc).replaceAll(t)
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
