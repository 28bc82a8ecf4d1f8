package template

import "github.com/moeproxy/moe/shared/api"

// filter is the request path. It converts from *Config, so the factory
// allocates nothing.
type filter Config

// OnReceive refuses a request without the required header.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if f.require != "" {
		if _, ok := h.Get(f.require); !ok {
			f.denied.Inc(1)
			// Reply sends the local reply and returns Stop.
			return ctx.Reply(f.Status, f.refusal, f.refusalHeaders)
		}
	}
	f.passed.Inc(1)
	return api.Continue
}

// Append stamps the response, local replies included (senders see them too).
func (f *filter) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if f.Stamp != nil {
		// Set never fails on the response headers while Append runs; a write
		// error would only say the stream ended, and then nothing is sent.
		_ = h.Set(f.stamp, f.Stamp.Render(ctx))
	}
	return api.Continue
}
