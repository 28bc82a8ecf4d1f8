package consumerrestriction

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// filter is the Config seen as the request path: stateless, shared by all
// requests of a config version.
type filter Config

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := (*Config)(f)
	// The consumer an earlier auth plugin set: in this chain, or in an earlier
	// golang filter of the request (read from Envoy's filter state).
	who := ctx.Consumer()
	if who == nil {
		c.stats.Denied(reasonNoConsumer)
		return c.unauth.Send(ctx)
	}
	allow, reason := c.decide(who, h)
	if allow {
		c.stats.Allowed()
		return api.Continue
	}
	c.stats.Denied(reason)
	switch {
	case reason == reasonBadPath:
		return c.badPath.Send(ctx)
	case consumer.IsAnonymous(who):
		return c.unauth.Send(ctx)
	default:
		return c.denied.Send(ctx)
	}
}

// decide applies the rules: a matching deny rule wins, then a matching allow
// rule, then the default action.
func (c *Config) decide(who *api.Consumer, h api.RequestHeaderMap) (bool, string) {
	anonymous := consumer.IsAnonymous(who)
	method := h.Method()
	var p string
	pathDone := false
	allowed := false
	for i := range c.rules {
		r := &c.rules[i]
		if (allowed && !r.deny) || !r.matchSubject(who, anonymous) || !r.matchMethod(method) {
			continue
		}
		if r.paths != nil {
			if !pathDone {
				var err error
				if p, err = matchPathOf(h.Path()); err != nil {
					return false, reasonBadPath
				}
				pathDone = true
			}
			if !r.matchPath(p) {
				continue
			}
		}
		if r.deny {
			return false, reasonRule
		}
		allowed = true
	}
	if allowed || c.defaultAllow {
		return true, ""
	}
	return false, reasonDefault
}
