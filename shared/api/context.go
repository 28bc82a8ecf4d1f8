package api

import (
	"context"
	"time"
)

// Context is the request-scoped context handed to every filter method. One
// Context exists per plugin per request; all of them share the request's
// variables, consumer and state.
//
// The context.Context part: Done() is closed when the request ends (Envoy
// destroyed the stream), Err() then returns context.Canceled. Pass ctx to
// client calls made in blocking phases so they stop when the client goes away.
//
// GetState/SetState/Consumer/SetConsumer/Log are safe from any goroutine at any
// time. Receiver()/Sender() handlers follow the ownership rules of HeaderMap.
type Context interface {
	context.Context

	// PluginName is the name of the plugin this context belongs to.
	PluginName() string
	// RequestID is the x-request-id header, or a generated id when absent.
	RequestID() string
	// Log returns a logger that tags lines with the plugin name and request id.
	Log() Logger

	// Receiver is the request-side handler (MOSN StreamReceiverFilterHandler).
	Receiver() ReceiverFilterHandler
	// Sender is the response-side handler (MOSN StreamSenderFilterHandler).
	Sender() SenderFilterHandler

	// Reply answers the request locally (a hijack reply from the direction that is
	// running: the request path in OnReceive, the response path in Append) and
	// returns Stop, so a filter cannot stop without replying by accident:
	//
	//	return ctx.Reply(403, "denied\n", api.Headers{"x-reason": {"acl"}})
	//
	// Like every Envoy local reply, a body gets content-type text/plain unless
	// headers set one. If the reply cannot be sent (the request already ended or was answered), the error
	// is logged at debug level and Stop is still returned.
	Reply(code int, body string, headers HeaderMap) Status

	// Consumer is the authenticated consumer, nil until an auth plugin sets it.
	Consumer() *Consumer
	// SetConsumer is called by auth plugins once the caller is authenticated.
	// Consumers are shared by the requests they identify and must not be
	// changed once set (the framework caches what it derives from them).
	SetConsumer(c *Consumer)

	// GetState/SetState is a per-request key/value store shared by all plugins.
	// Prefix keys with your plugin name to avoid clashes.
	GetState(key string) (any, bool)
	SetState(key string, value any)

	// Decide records what this plugin decided (see Decision). Replies and
	// identified consumers are recorded by the framework already.
	Decide(allowed bool, reason string)
	// Decisions are the decisions recorded so far for the request, in order
	// (nil unless a plugin of the chain declared Needs.Observe).
	Decisions() []Decision
	// TraceCalls times and records every plugin hook call of the request from
	// now on (two clock reads per call, so only for requests that ask, e.g. a
	// debug header); Calls returns them.
	TraceCalls()
	Calls() []PluginCall

	// Var resolves a variable such as "$header_x-user" for this request. It parses
	// the name on each call; for per-request hot paths compile a
	// variables.Template at config time instead.
	Var(name string) (string, bool)
}

// ReceiverFilterHandler is the request-side handler, MOSN style.
type ReceiverFilterHandler interface {
	// SendHijackReply answers the request with code and headers and no body. The
	// filter must then return Stop. The reply goes through the sender filters.
	SendHijackReply(code int, headers HeaderMap) error
	SendHijackReplyWithBody(code int, headers HeaderMap, body string) error
	// SendDirectResponse answers with a full response; the status is taken from
	// headers[":status"] (200 if absent). Envoy local replies carry no trailers,
	// so trailers must be nil or empty.
	SendDirectResponse(headers HeaderMap, body Buffer, trailers HeaderMap) error

	GetRequestHeaders() RequestHeaderMap
	// SetRequestHeaders replaces all request headers (pseudo headers are kept
	// unless given).
	SetRequestHeaders(headers HeaderMap) error
	// GetRequestData is the buffered request body; nil unless a plugin of the chain
	// declared WholeBody and the request has a body.
	GetRequestData() Buffer
	SetRequestData(data Buffer) error
	GetRequestTrailers() HeaderMap
	SetRequestTrailers(trailers HeaderMap) error

	RequestInfo() RequestInfo
	Route() RouteInfo
	// ClearRouteCache makes Envoy match the route again now (the SDK's
	// RefreshRouteCache), after changing what routing reads: later plugins'
	// Route() and $route_name/$cluster see the new route. BeforeRoute plugins do
	// not need it: the framework does it after the BeforeRoute group.
	ClearRouteCache() error
	// SetUpstreamOverrideHost pins the upstream host ("ip" or "ip:port"); this is
	// the Envoy counterpart of MOSN's AfterChooseHost. strict=true answers 503 when
	// the host is not available instead of falling back to load balancing.
	SetUpstreamOverrideHost(host string, strict bool) error
}

// SenderFilterHandler is the response-side handler, MOSN style.
type SenderFilterHandler interface {
	GetResponseHeaders() ResponseHeaderMap
	SetResponseHeaders(headers HeaderMap) error
	// GetResponseData is the buffered response body (ResponseBody: WholeBody).
	GetResponseData() Buffer
	SetResponseData(data Buffer) error
	GetResponseTrailers() HeaderMap
	SetResponseTrailers(trailers HeaderMap) error

	// GetRequestHeaders gives the request headers, read only on the response path.
	GetRequestHeaders() RequestHeaderMap
	RequestInfo() RequestInfo
	Route() RouteInfo
	// SendHijackReply replaces the response (only while response headers have
	// not been sent downstream, i.e. in Append on headers).
	SendHijackReply(code int, headers HeaderMap) error
	SendHijackReplyWithBody(code int, headers HeaderMap, body string) error
}

// RequestInfo is MOSN's RequestInfo: facts about the request and its outcome.
type RequestInfo interface {
	StartTime() time.Time
	// Duration since StartTime (the whole request once in the log phase).
	Duration() time.Duration
	Protocol() string
	// ResponseCode is known once the response started (0 before).
	ResponseCode() int
	DownstreamRemoteAddress() string
	DownstreamLocalAddress() string
	UpstreamHost() string
	UpstreamCluster() string
	// GetProperty reads an Envoy attribute such as "request.id" or
	// "xds.route_name". Prefer the typed methods.
	GetProperty(key string) (string, error)
}

// RouteInfo describes the matched route (AfterRoute plugins).
type RouteInfo interface {
	RouteName() string
	ClusterName() string
}

// Logger tags each line with the plugin name and request id.
type Logger interface {
	Debugf(format string, args ...any)
	Infof(format string, args ...any)
	Warnf(format string, args ...any)
	Errorf(format string, args ...any)
}
