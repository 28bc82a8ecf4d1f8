package extauth

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// filter is stateless and shared by all requests of a config version.
type filter struct{ rt *runtime }

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, body api.Buffer, _ api.HeaderMap) api.Status {
	rt := f.rt
	if rt.body != nil && !rt.body.AllowPartialMessage && body != nil && body.Len() > rt.body.MaxRequestBytes {
		// Normally the framework already answered 413 (Needs.MaxRequestBody).
		rt.tooLargeC.Inc(1)
		return rt.bodyTooLarge.Send(ctx)
	}
	var key [32]byte
	if rt.cache != nil {
		key = rt.cacheKey(h, body)
		if res, ok := rt.cache.get(key, time.Now().UnixNano()); ok {
			rt.cacheHitC.Inc(1)
			return rt.apply(ctx, h, res)
		}
	}
	res, err := rt.check(ctx, h, body)
	if err != nil {
		return rt.fail(ctx, h, err)
	}
	if rt.cache != nil {
		rt.cache.add(key, res, time.Now().UnixNano())
	}
	return rt.apply(ctx, h, res)
}

func (rt *runtime) apply(ctx api.Context, h api.RequestHeaderMap, res *result) api.Status {
	if !res.allow {
		rt.deniedC.Inc(1)
		return ctx.Reply(res.status, res.body, res.headers)
	}
	for i, name := range rt.upstream {
		if res.upOK[i] {
			_ = h.Set(name, res.upVals[i])
		} else {
			_ = h.Del(name) // the client must not supply what the service vouches for
		}
	}
	rt.identify(ctx, h, res.consumer)
	rt.allowedC.Inc(1)
	return api.Continue
}

// identify sets the consumer the service named and forwards it in
// consumer_header. When the service named none, the header carries the
// consumer an earlier auth plugin established, or is removed: it never
// comes from the client.
func (rt *runtime) identify(ctx api.Context, h api.RequestHeaderMap, c *api.Consumer) {
	if c != nil {
		consumer.Identify(ctx, h, c, rt.consumerHeader)
		return
	}
	consumer.Forward(ctx, h, rt.consumerHeader)
}

// fail handles a service that did not answer: fail open or closed.
func (rt *runtime) fail(ctx api.Context, h api.RequestHeaderMap, err error) api.Status {
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		// The client went away: nobody is waiting for an answer.
		rt.errorC.Inc(1)
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		rt.timeoutC.Inc(1)
	default:
		rt.errorC.Inc(1)
	}
	// err is the network reason only (check strips the request URL); name the
	// service by its configured URL, never by the client's path or query.
	ctx.Log().Warnf("authorization service %s failed: %v", rt.service, err)
	if rt.failOpen {
		rt.failOpenC.Inc(1)
		if rt.failOpenHeader {
			_ = h.Set("x-envoy-auth-failure-mode-allowed", "true")
		}
		// Headers the service would vouch for must not come from the client.
		for _, name := range rt.upstream {
			_ = h.Del(name)
		}
		rt.identify(ctx, h, nil)
		return api.Continue
	}
	return rt.errorReply.Send(ctx)
}
