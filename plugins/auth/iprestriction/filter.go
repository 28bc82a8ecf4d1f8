package iprestriction

import (
	"github.com/moeproxy/moe/shared/api"
)

// filter is the Config seen as the request path: stateless, shared by all
// requests of a config version.
type filter Config

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := (*Config)(f)
	a, ok := c.clientAddr(ctx, h)
	switch {
	case !ok:
		return c.reject(ctx, c.m.badAddress)
	case c.deny.contains(a):
		return c.reject(ctx, c.m.denyList)
	case !c.allow.empty() && !c.allow.contains(a):
		return c.reject(ctx, c.m.notAllowed)
	}
	c.m.allowed.Inc(1)
	return api.Continue
}

// reject answers the denial reply; the address is never echoed.
func (c *Config) reject(ctx api.Context, reason api.Counter) api.Status {
	reason.Inc(1)
	return ctx.Reply(c.Status, c.Message, c.replyHeaders)
}
