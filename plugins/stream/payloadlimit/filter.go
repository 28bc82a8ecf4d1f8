package payloadlimit

import (
	"strconv"

	"github.com/moeproxy/moe/shared/api"
)

// The filters hold one request's running byte counts, so the factory
// allocates one small object per request. Each direction has its own type
// and fields: a config with only a request limit gives a filter without
// response hooks (the response path then skips the plugin), and the request
// and response paths, which Envoy may run at the same time, never share a
// field.

// reqFilter limits the request body.
type reqFilter struct {
	c    *Config
	seen int64 // request body bytes so far
	ok   bool  // Content-Length within the limit: nothing to count
}

// OnReceive refuses a declared Content-Length over the limit before any
// body is read (and before anything reaches the upstream).
func (f *reqFilter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if v, ok := h.Get("content-length"); ok {
		// Envoy's codec refuses a malformed or conflicting Content-Length; if
		// it still does not parse, the body is counted instead.
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			if n > f.c.maxReq {
				f.c.reqTooLarge.Inc(1)
				return ctx.Reply(f.c.Status, f.c.Body, f.c.replyHeaders)
			}
			f.ok = true // the codec ends the body at Content-Length
		}
	}
	return api.Continue
}

// OnReceiveData counts a chunked body as it streams (no copy: only the
// chunk's length is read) and refuses it as soon as the total passes the
// limit.
func (f *reqFilter) OnReceiveData(ctx api.Context, chunk api.Buffer, _ bool) api.Status {
	if f.ok {
		return api.Continue
	}
	f.seen += int64(chunk.Len())
	if f.seen > f.c.maxReq {
		f.c.reqTooLarge.Inc(1)
		f.c.reqTooLargeStreamed.Inc(1)
		return ctx.Reply(f.c.Status, f.c.Body, f.c.replyHeaders)
	}
	return api.Continue
}

// respFilter limits the response body.
type respFilter struct {
	c    *Config
	seen int64
	ok   bool
}

// Append replaces a response whose Content-Length is over the limit (its
// headers have not gone downstream yet).
func (f *respFilter) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	v, ok := h.Get("content-length")
	if !ok {
		return api.Continue
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return api.Continue
	}
	if n > f.c.maxResp && !bodyless(ctx, h) {
		f.c.respTooLarge.Inc(1)
		return ctx.Reply(f.c.ResponseStatus, f.c.ResponseBody, f.c.replyHeaders)
	}
	f.ok = true
	return api.Continue
}

// AppendData counts a chunked response. Its headers have already gone
// downstream, so past the limit the reply cannot replace it: the stream is
// reset (the client sees a truncated response), as Envoy does when a local
// reply comes after the response started.
func (f *respFilter) AppendData(ctx api.Context, chunk api.Buffer, _ bool) api.Status {
	if f.ok {
		return api.Continue
	}
	f.seen += int64(chunk.Len())
	if f.seen > f.c.maxResp {
		f.c.respTooLarge.Inc(1)
		f.c.respTooLargeStreamed.Inc(1)
		ctx.Log().Debugf("response body over %d bytes after its headers were sent: resetting the stream", f.c.maxResp)
		return ctx.Reply(f.c.ResponseStatus, f.c.ResponseBody, f.c.replyHeaders)
	}
	return api.Continue
}

// bodyless: the Content-Length of a HEAD response, a 204 or a 304 describes
// a body that is not sent.
func bodyless(ctx api.Context, h api.ResponseHeaderMap) bool {
	if s := h.Status(); s == 204 || s == 304 {
		return true
	}
	req := ctx.Sender().GetRequestHeaders()
	return req != nil && req.Method() == "HEAD"
}

// bothFilter limits both directions.
type bothFilter struct {
	reqFilter
	respFilter
}

// newFilter picks the filter type for the config's limits.
func newFilter(c *Config) api.Filter {
	switch {
	case c.maxReq > 0 && c.maxResp > 0:
		return &bothFilter{reqFilter{c: c}, respFilter{c: c}}
	case c.maxResp > 0:
		return &respFilter{c: c}
	}
	return &reqFilter{c: c}
}
