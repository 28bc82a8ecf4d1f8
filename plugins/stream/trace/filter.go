package trace

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// stateKey holds the request's *filter in the request state, for the
// $trace_id and $span_id variables.
const stateKey = "trace.span"

// filter is one request's trace: created per request (one allocation), it
// is also what the variables read.
type filter struct {
	c *Config

	began       bool
	traceparent string // as sent upstream: $trace_id and $span_id slice it
	trace       traceID
	span        spanID
	parent      spanID
	flags       byte
	sampled     bool
	tracestate  string
	requestID   string
}

// OnReceive continues a valid trace, starts one when there is none and
// replaces a malformed one, decides sampling, sends traceparent (and
// tracestate) upstream, and keeps or generates the request id.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := f.c
	tps := h.Values("traceparent")
	var p parent
	ok := false
	if len(tps) == 1 { // several traceparent headers are invalid
		p, ok = parseTraceparent(tps[0])
	}
	switch {
	case ok:
		c.continued.Inc(1)
		f.trace, f.parent = p.trace, p.span
		if c.Sampling.ParentBased {
			f.sampled = p.flags&flagSampled != 0
		} else {
			f.sampled = sampledByRatio(f.trace, c.bound)
		}
		f.flags = p.flags&^flagSampled | b2flag(f.sampled)
		if ts := h.Values("tracestate"); len(ts) > 0 {
			s := ts[0]
			if len(ts) > 1 {
				s = strings.Join(ts, ",")
			}
			if validTracestate(s) {
				f.tracestate = s
			}
			if len(ts) > 1 || f.tracestate == "" {
				if f.tracestate != "" {
					_ = h.Set("tracestate", f.tracestate)
				} else {
					_ = h.Del("tracestate")
				}
			}
		}
	default:
		if len(tps) > 0 {
			c.replaced.Inc(1)
		} else {
			c.started.Inc(1)
		}
		f.trace = newTraceID()
		f.sampled = sampledByRatio(f.trace, c.bound)
		f.flags = b2flag(f.sampled)
		// A new trace carries no vendor state of the old one.
		if _, had := h.Get("tracestate"); had {
			_ = h.Del("tracestate")
		}
	}
	f.span = newSpanID()
	f.traceparent = formatTraceparent(f.trace, f.span, f.flags)
	_ = h.Set("traceparent", f.traceparent)
	if f.sampled {
		c.sampled.Inc(1)
	}

	if c.ridHeader != "" {
		if id, ok := h.Get(c.ridHeader); ok && id != "" {
			f.requestID = id
		} else if c.RequestID.Generate {
			f.requestID = newRequestID()
			_ = h.Set(c.ridHeader, f.requestID)
			c.generated.Inc(1)
		}
	}
	f.began = true
	ctx.SetState(stateKey, f)
	if f.sampled && c.ChildSpans && c.pipe != nil {
		ctx.TraceCalls()
	}
	return api.Continue
}

func b2flag(sampled bool) byte {
	if sampled {
		return flagSampled
	}
	return 0
}

// Append returns the request id to the client.
func (f *filter) Append(_ api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if f.requestID != "" && f.c.RequestID.IncludeInResponse {
		_ = h.Set(f.c.ridHeader, f.requestID)
	}
	return api.Continue
}

// Log hands a sampled request's span to the exporter (never waiting).
func (f *filter) Log(ctx api.Context, req api.RequestHeaderMap, resp api.ResponseHeaderMap, info api.RequestInfo) {
	c := f.c
	if !f.began || !f.sampled || c.pipe == nil {
		return
	}
	r := &spanRec{trace: f.trace, span: f.span, parent: f.parent, flags: f.flags, tracestate: f.tracestate}
	r.start = info.StartTime()
	r.end = r.start.Add(info.Duration())
	status := 0
	if resp != nil {
		status = resp.Status()
	}
	if status == 0 {
		status = info.ResponseCode()
	}
	var method, path string
	attrs := make([]attribute.KeyValue, 0, 12+len(c.attrs))
	if req != nil {
		method, path = req.Method(), req.Path()
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		attrs = append(attrs,
			attribute.String("http.request.method", method),
			attribute.String("url.path", path),
			attribute.String("url.scheme", req.Scheme()),
			attribute.String("server.address", req.Host()))
		if ua, ok := req.Get("user-agent"); ok {
			attrs = append(attrs, attribute.String("user_agent.original", ua))
		}
	}
	ip, _ := variables.SplitAddress(info.DownstreamRemoteAddress())
	rt := ctx.Receiver().Route()
	route := rt.RouteName()
	attrs = append(attrs,
		attribute.String("client.address", ip),
		attribute.String("network.protocol.version", strings.TrimPrefix(info.Protocol(), "HTTP/")),
		attribute.String("moe.route", route))
	if cl := rt.ClusterName(); cl != "" {
		attrs = append(attrs, attribute.String("moe.cluster", cl))
	}
	if status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", status))
	}
	if f.requestID != "" {
		attrs = append(attrs, attribute.String("moe.request_id", f.requestID))
	}
	if cs := ctx.Consumer(); cs != nil {
		attrs = append(attrs, attribute.String("moe.consumer", cs.Name))
	}
	if d, err := info.GetProperty("response.code_details"); err == nil && d != "" {
		attrs = append(attrs, attribute.String("moe.response_code_details", d))
	}
	for _, a := range c.attrs {
		attrs = append(attrs, attribute.String(a.name, a.tpl.Render(ctx)))
	}
	r.attrs = attrs
	switch {
	case status == 0:
		r.status, r.statusMsg = codes.Error, "no response (request aborted)"
	case status >= 500:
		r.status, r.statusMsg = codes.Error, "HTTP "+itoa(status)
	}
	if c.SpanName != nil {
		r.name = c.SpanName.Render(ctx)
	} else if route != "" {
		r.name = method + " " + route
	} else {
		r.name = method
	}
	if c.ChildSpans {
		// Every plugin call after trace turned timing on, but its own.
		calls := ctx.Calls()
		n := 0
		for _, call := range calls {
			if call.Plugin != ctx.PluginName() {
				calls[n] = call
				n++
			}
		}
		r.calls = calls[:n]
	}
	c.pipe.push(r)
}

func itoa(n int) string {
	var b [8]byte
	i := len(b)
	for n > 0 && i > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
