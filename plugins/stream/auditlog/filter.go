package auditlog

import (
	"github.com/moeproxy/moe/plugins/stream/internal/logsink"
	"github.com/moeproxy/moe/shared/api"
)

// filter is the compiled config seen as the per-request filter.
type filter Config

// Log builds the request's record and queues it; it never waits (a full
// queue drops the record and counts it).
func (f *filter) Log(ctx api.Context, req api.RequestHeaderMap, resp api.ResponseHeaderMap, info api.RequestInfo) {
	if f.Match != nil && (req == nil || !f.Match.Matches(ctx, req)) {
		return
	}
	l := logsink.GetLine()
	var denied bool
	*l, denied = (*Config)(f).appendRecord(*l, ctx, req, resp, info)
	if denied {
		f.denied.Inc(1)
	}
	f.queue.Push(l)
}
