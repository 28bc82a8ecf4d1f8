package directresponse

import "github.com/moeproxy/moe/shared/api"

// filter is the config itself, seen as a filter: stateless per request.
type filter Config

// OnReceive answers with the first rule that matches; other requests go on.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	for i := range f.answers {
		a := &f.answers[i]
		if a.match.Matches(ctx, h) {
			f.responses.Inc(1)
			return ctx.Reply(a.status, a.body, a.headers)
		}
	}
	return api.Continue
}
