package accesslog

import (
	"github.com/moeproxy/moe/plugins/stream/internal/logsink"
	"github.com/moeproxy/moe/shared/api"
)

// filter is the compiled config seen as the per-request filter.
type filter Config

// Log renders the request's line and queues it; it never waits (a full
// queue drops the line and counts it).
func (f *filter) Log(ctx api.Context, req api.RequestHeaderMap, _ api.ResponseHeaderMap, _ api.RequestInfo) {
	if f.Match != nil && (req == nil || !f.Match.Matches(ctx, req)) {
		return
	}
	l := logsink.GetLine()
	b := *l
	if f.fields != nil {
		for i := range f.fields {
			b = append(b, f.fields[i].prefix...)
			b = logsink.AppendJSONString(b, f.fields[i].tpl.Render(ctx))
		}
		b = append(b, '}')
	} else {
		b = logsink.EscapeControl(f.format.AppendTo(b, ctx), 0)
	}
	*l = append(b, '\n')
	f.queue.Push(l)
}
