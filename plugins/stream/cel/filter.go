package cel

import (
	"errors"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// The filter types: one per point, combined by embedding, so that the
// framework sees only the hooks of points that have rules (a point without
// rules costs nothing). Each is stateless and shared by all requests.
type (
	onRequest  struct{ c *compiled }
	onResponse struct{ c *compiled }
	onLog      struct{ c *compiled }

	requestResponse struct {
		onRequest
		onResponse
	}
	requestLog struct {
		onRequest
		onLog
	}
	responseLog struct {
		onResponse
		onLog
	}
	allPoints struct {
		onRequest
		onResponse
		onLog
	}
)

func (c *compiled) newFilter() api.Filter {
	req, resp, log := len(c.request) > 0, len(c.response) > 0, len(c.log) > 0
	switch {
	case req && resp && log:
		return &allPoints{onRequest{c}, onResponse{c}, onLog{c}}
	case req && resp:
		return &requestResponse{onRequest{c}, onResponse{c}}
	case req && log:
		return &requestLog{onRequest{c}, onLog{c}}
	case resp && log:
		return &responseLog{onResponse{c}, onLog{c}}
	case resp:
		return &onResponse{c}
	case log:
		return &onLog{c}
	}
	return &onRequest{c}
}

// OnReceive runs the request rules; header actions change the request.
func (f *onRequest) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	return f.c.run(ctx, f.c.request, h)
}

// Append runs the response rules (local replies included); header actions
// change the response, a deny replaces it.
func (f *onResponse) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	return f.c.run(ctx, f.c.response, h)
}

// Log runs the log rules once the response is done (variables, marks and
// log lines only).
func (f *onLog) Log(ctx api.Context, _ api.RequestHeaderMap, _ api.ResponseHeaderMap, _ api.RequestInfo) {
	f.c.run(ctx, f.c.log, nil)
}

// run applies the rules of one point in order. Within a matching rule the
// actions run as listed in the README: variables, mark, headers, log, deny.
func (c *compiled) run(ctx api.Context, rules []*rule, h api.HeaderMap) api.Status {
	for _, r := range rules {
		if r.when != nil {
			ok, err := r.when.Eval(ctx)
			if err != nil {
				c.errors.Inc(1)
				ctx.Log().Debugf("rule %s: when: %v", r.name, err)
				ok = r.matchOnError
			}
			if !ok {
				continue
			}
		}
		c.matched.Inc(1)
		if r.matched != nil {
			r.matched.Inc(1)
		}
		for i := range r.vars {
			if s, ok := c.value(ctx, r, &r.vars[i]); ok {
				ctx.SetState(r.vars[i].name, s)
			}
		}
		if r.mark != "" {
			addMark(ctx, r.mark)
			ctx.Decide(true, r.markReason)
		}
		if h != nil {
			for i := range r.headers {
				if s, ok := c.value(ctx, r, &r.headers[i]); ok {
					_ = h.Set(r.headers[i].name, s)
				}
			}
			for _, k := range r.remove {
				if _, ok := h.Get(k); ok {
					_ = h.Del(k)
				}
			}
		}
		if r.log != nil {
			if s, err := r.log.Eval(ctx); err != nil {
				c.errors.Inc(1)
				ctx.Log().Debugf("rule %s: log: %v", r.name, err)
			} else {
				ctx.Log().Infof("rule %s: %s", r.name, printable(s, 1024))
			}
		}
		if r.deny != nil {
			c.denied.Inc(1)
			return ctx.Reply(r.deny.status, r.deny.body, r.deny.headers)
		}
	}
	return api.Continue
}

var errControl = errors.New("the value contains CR, LF or NUL")

// value renders a set_vars / set_headers value. A failed expression, or a
// value a header cannot carry, skips the action (counted in errors).
func (c *compiled) value(ctx api.Context, r *rule, v *value) (string, bool) {
	var s string
	var err error
	if v.tpl != nil {
		s = v.tpl.Render(ctx)
	} else {
		s, err = v.ex.Eval(ctx)
	}
	if err == nil && strings.ContainsAny(s, "\r\n\x00") {
		err = errControl
	}
	if err != nil {
		c.errors.Inc(1)
		ctx.Log().Debugf("rule %s: %s: %v", r.name, v.name, err)
		return "", false
	}
	return s, true
}

// addMark appends a mark to the request's marks (comma-separated, each once).
func addMark(ctx api.Context, m string) {
	cur, _ := ctx.GetState(stateMarks)
	s, _ := cur.(string)
	switch {
	case s == "":
		s = m
	case hasMark(s, m):
		return
	default:
		s += "," + m
	}
	ctx.SetState(stateMarks, s)
}

func hasMark(list, m string) bool {
	for rest := list; rest != ""; {
		var tok string
		tok, rest, _ = strings.Cut(rest, ",")
		if tok == m {
			return true
		}
	}
	return false
}

// printable cuts s to n bytes and replaces control characters, so a value
// from the request cannot forge log lines.
func printable(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
