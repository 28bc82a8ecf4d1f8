package api

// Filter is the per-request object a plugin's Factory returns. It implements
// any of the interfaces below; the framework learns which ones once per config
// (by calling the Factory at config time) so phases nobody implements cost
// nothing per request.
type Filter = any

// Factory builds the per-request filter from the parsed config. It is called
// lazily, the first time the plugin runs for a request, and must always return
// the same concrete type for a given config. A stateless filter may return one
// shared value (no allocation per request); then it must be safe for
// concurrent use. A factory that returns an equal filter on two calls at config
// time (the same pointer, or a comparable value such as an empty struct) and
// whose filter takes no handlers is not called per request: every request uses
// that filter. So a factory must have no side effects.
type Factory func(config any) Filter

// ReceiverFilter runs on the request path (MOSN StreamReceiverFilter.OnReceive).
// body is nil unless the plugin declared WholeBody and the request has one;
// trailers is nil except for a request that has trailers but no body. Plugins
// run in configured order (BeforeRoute ones first).
type ReceiverFilter interface {
	OnReceive(ctx Context, headers RequestHeaderMap, body Buffer, trailers HeaderMap) Status
}

// SenderFilter runs on the response path (MOSN StreamSenderFilter.Append), in
// reverse configured order. It also sees local replies (including another
// plugin's hijack reply), as Envoy encoder filters do.
type SenderFilter interface {
	Append(ctx Context, headers ResponseHeaderMap, body Buffer, trailers HeaderMap) Status
}

// StreamingReceiver gets request body chunks when the plugin declared
// RequestBody: StreamingBody. A request with trailers ends with an empty chunk
// and endStream=true; read them with ctx.Receiver().GetRequestTrailers().
type StreamingReceiver interface {
	OnReceiveData(ctx Context, chunk Buffer, endStream bool) Status
}

// StreamingSender is StreamingReceiver for the response (ResponseBody: StreamingBody).
type StreamingSender interface {
	AppendData(ctx Context, chunk Buffer, endStream bool) Status
}

// AccessLogger runs once per request after the response is done, also for
// requests that were aborted or rejected early (respHeaders may then be nil).
// It runs on Envoy's worker thread: never block here, copy what you need and use
// Go() for I/O. Headers are read-only.
type AccessLogger interface {
	Log(ctx Context, reqHeaders RequestHeaderMap, respHeaders ResponseHeaderMap, info RequestInfo)
}

// Destroyer runs exactly once per request for every plugin whose filter was
// created, after the access log, also for aborted requests.
type Destroyer interface {
	OnDestroy()
}

// ReceiverHandlerSetter and SenderHandlerSetter are MOSN's way to hand the
// handler to a filter; they are called right after the Factory, before the first
// OnReceive/Append. ctx.Receiver()/ctx.Sender() return the same handlers.
type ReceiverHandlerSetter interface {
	SetReceiveFilterHandler(ReceiverFilterHandler)
}

type SenderHandlerSetter interface {
	SetSenderFilterHandler(SenderFilterHandler)
}

// PassThroughFilter implements every filter interface as a no-op. Embedding it
// is a quick start, but the framework then thinks the plugin implements every
// phase; implement only what you need for the fast path.
type PassThroughFilter struct{}

func (PassThroughFilter) OnReceive(Context, RequestHeaderMap, Buffer, HeaderMap) Status {
	return Continue
}
func (PassThroughFilter) Append(Context, ResponseHeaderMap, Buffer, HeaderMap) Status {
	return Continue
}
