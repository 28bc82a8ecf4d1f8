package api

// BodyMode says how much of a body a plugin needs to see.
type BodyMode uint8

const (
	// HeadersOnly (the default): the plugin runs once per direction on the headers.
	// No body is buffered for it and streaming is preserved; body and trailers
	// arguments are nil.
	HeadersOnly BodyMode = iota
	// WholeBody: the framework buffers the whole body (StopAndBuffer in Envoy) and
	// calls the plugin once with headers and body. Trailers are nil: Envoy
	// forwards the body before Go sees the trailers (use StreamingBody to see
	// them). Envoy itself answers
	// 413 (request) or 500 (response) when the body exceeds the connection buffer
	// limit; Needs.MaxRequestBody/MaxResponseBody add a tighter limit.
	WholeBody
	// StreamingBody: OnReceive/Append run on the headers (body nil); then each chunk
	// goes to OnReceiveData/AppendData as it arrives, without buffering. If another
	// plugin of the chain needs WholeBody, streaming plugins see the whole body as
	// one chunk.
	StreamingBody
)

func (m BodyMode) String() string {
	switch m {
	case HeadersOnly:
		return "headers-only"
	case WholeBody:
		return "whole-body"
	case StreamingBody:
		return "streaming"
	}
	return "BodyMode(?)"
}

// Phase places a receiver filter in MOSN's decode phases.
type Phase uint8

const (
	// AfterRoute (the default): the route and cluster are known when OnReceive runs.
	AfterRoute Phase = iota
	// BeforeRoute: the plugin may change what routing reads (headers, path, host).
	// All BeforeRoute plugins run before all AfterRoute plugins (each group keeps
	// the configured order). If any BeforeRoute plugin changed request headers, the
	// framework writes them to Envoy and clears the route cache before the first
	// AfterRoute plugin, so Envoy matches the route again.
	//
	// MOSN's AfterChooseHost has no HTTP-filter equivalent in Envoy: host selection
	// happens in the router, after every HTTP filter. Port such filters as
	// AfterRoute and pin the host with ReceiverFilterHandler.SetUpstreamOverrideHost.
	BeforeRoute
)

func (p Phase) String() string {
	if p == BeforeRoute {
		return "BeforeRoute"
	}
	return "AfterRoute"
}

// Blocking is a set of the plugin's phases that may block (network I/O, locks
// held for long, sleeps). The framework runs a phase on Envoy's worker thread
// unless a plugin of that phase declares it may block; then it runs the phase
// from that plugin on in a goroutine and resumes Envoy when done. Pure CPU work
// must not be declared: it would cost a goroutine and a thread hop per request.
type Blocking uint8

const (
	// BlockReceive: OnReceive / OnReceiveData may block.
	BlockReceive Blocking = 1 << iota
	// BlockSend: Append / AppendData may block.
	BlockSend
)

// Needs is what a plugin declares about itself. Register it with the plugin; a
// parsed config implementing NeedsProvider can override it per config.
type Needs struct {
	// Phase of the receiver filter (BeforeRoute or AfterRoute).
	Phase Phase
	// RequestBody / ResponseBody: how much body OnReceive / Append need.
	RequestBody  BodyMode
	ResponseBody BodyMode
	// MaxRequestBody / MaxResponseBody (bytes, 0 = only Envoy's own limit) cap a
	// WholeBody buffer. Larger requests get 413, larger responses 500, like Envoy.
	MaxRequestBody  int
	MaxResponseBody int
	// MayBlock lists the phases that may block (see Blocking).
	MayBlock Blocking
	// Observe: the plugin reads the request's decisions (Context.Decisions),
	// e.g. an audit log. The framework records decisions only for chains with
	// such a plugin.
	Observe bool
}

// NeedsProvider may be implemented by a parsed plugin config whose needs depend
// on the config (for example an auth plugin that only calls a remote service when
// configured to). It replaces the Needs registered with the plugin.
type NeedsProvider interface {
	Needs() Needs
}
