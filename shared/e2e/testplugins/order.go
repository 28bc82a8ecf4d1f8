package testplugins

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Three plugins that check moe's copy of the request headers against the
// host's own map (TestE2EHeaderCopyFollowsTheHostsMap):
//   - e2e-order-write (BeforeRoute) records the headers as it first sees them
//     (state e2e.order.first), then changes some; leaving the BeforeRoute
//     group sends the changes to the host;
//   - e2e-order-view records the headers as moe's copy says they are now
//     (state e2e.order.view): the host was not asked again;
//   - e2e-order-check, in a golang filter of its own after moe's, gets a
//     fresh copy from the host and answers 500 naming both when the host's
//     map differs from the view, else lets the request through with both
//     views as request headers for the test to read upstream.

// entries renders h as "k=v;k=v" in the order Range gives.
func entries(h api.HeaderMap) string {
	var b strings.Builder
	h.Range(func(k, v string) bool {
		if b.Len() > 0 {
			b.WriteByte(';')
		}
		b.WriteString(k + "=" + v)
		return true
	})
	return b.String()
}

type orderWrite struct{}

func (orderWrite) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	ctx.SetState("e2e.order.first", entries(h))
	return rewrite(ctx, h, "x-first", "x-gone", "x-new", "n")
}

// rewrite checks that h has x-multi a,b, then sets existing (a header Envoy
// has: Envoy moves it last), deletes gone, adds a third x-multi and sets a
// new header.
func rewrite(ctx api.Context, h api.HeaderMap, existing, gone, newKey, newValue string) api.Status {
	if multi := h.Values("x-multi"); strings.Join(multi, ",") != "a,b" {
		return ctx.Reply(500, "x-multi values "+strings.Join(multi, ","), nil)
	}
	_ = h.Set(existing, "changed")
	_ = h.Del(gone)
	_ = h.Add("x-multi", "c")
	_ = h.Set(newKey, newValue)
	return api.Continue
}

type orderView struct{}

func (orderView) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	ctx.SetState("e2e.order.view", entries(h))
	return api.Continue
}

type orderCheck struct{}

func (orderCheck) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	first, _ := ctx.GetState("e2e.order.first")
	view, _ := ctx.GetState("e2e.order.view")
	host := entries(h)
	if view != host {
		return ctx.Reply(500, "moe's copy: "+view.(string)+"\nthe host's map: "+host+"\n", nil)
	}
	_ = h.Set("x-e2e-first", first.(string))
	_ = h.Set("x-e2e-view", view.(string))
	return api.Continue
}

func init() {
	registry.Register(registry.Plugin{
		Name:        "e2e-order-write",
		Description: "e2e: records the request headers' order, then changes some",
		Factory:     func(any) api.Filter { return orderWrite{} },
		Needs:       api.Needs{Phase: api.BeforeRoute},
	})
	registry.Register(registry.Plugin{
		Name:        "e2e-order-view",
		Description: "e2e: records the request headers as moe's copy has them",
		Factory:     func(any) api.Filter { return orderView{} },
	})
	registry.Register(registry.Plugin{
		Name:        "e2e-order-trailers",
		Description: "e2e: records the request trailers' order, then changes some",
		Factory:     func(any) api.Filter { return orderTrailers{} },
		Needs:       api.Needs{RequestBody: api.StreamingBody},
	})
	registry.Register(registry.Plugin{
		Name:        "e2e-late",
		Description: "e2e: reads the response headers on the last chunk, after an async headers phase",
		Factory:     func(any) api.Filter { return late{} },
		Needs:       api.Needs{ResponseBody: api.StreamingBody, MayBlock: api.BlockSend},
	})
	registry.Register(registry.Plugin{
		Name:        "e2e-order-check",
		Description: "e2e: compares the host's request headers with the recorded view",
		Factory:     func(any) api.Filter { return orderCheck{} },
	})
}

// orderTrailers does with the request trailers what e2e-order-write does with
// the headers, on the empty last chunk that comes with them: it records them
// (trailer x-e2e-trailers) and changes some.
type orderTrailers struct{}

func (orderTrailers) OnReceiveData(ctx api.Context, _ api.Buffer, end bool) api.Status {
	t := ctx.Receiver().GetRequestTrailers()
	if !end || t == nil {
		return api.Continue
	}
	return rewrite(ctx, t, "x-checksum", "x-drop", "x-e2e-trailers", entries(t))
}

// late reads the response headers on the last response chunk after its own
// response headers phase went to a goroutine (Envoy keeps letting Go copy
// them then, while the connection manager has changed them since): for a
// request with x-e2e-late it appends what it read to the body.
type late struct{}

func isLate(ctx api.Context) bool {
	_, ok := ctx.Sender().GetRequestHeaders().Get("x-e2e-late")
	return ok
}

// Append only makes the response headers phase run in a goroutine (MayBlock):
// it reads nothing, so no copy of the response headers exists before the
// last chunk. (The test's response is chunked: the body may grow.)
func (late) Append(api.Context, api.ResponseHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	return api.Continue
}

func (late) AppendData(ctx api.Context, chunk api.Buffer, end bool) api.Status {
	if !end || !isLate(ctx) {
		return api.Continue
	}
	h := ctx.Sender().GetResponseHeaders()
	up, _ := h.Get("x-upstream")
	status, _ := h.Get(":status")
	_ = chunk.AppendString("\nlate: " + status + " " + up)
	return api.Continue
}
