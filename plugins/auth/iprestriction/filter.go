// Package iprestriction is the ip-restriction plugin: allow and deny lists of
// CIDRs checked against the downstream address or a trusted X-Forwarded-For
// hop.
package iprestriction

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "ip-restriction"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "allow/deny CIDR lists on the client address (downstream or X-Forwarded-For hop)",
		NewConfig:   newConfig,
		// The filter is stateless: one value per config, no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
	})
}

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

func (c *Config) reject(ctx api.Context, reason api.Counter) api.Status {
	reason.Inc(1)
	if err := ctx.Receiver().SendHijackReplyWithBody(c.Status, c.replyHeaders, c.Message); err != nil {
		// The stream is gone or already answered: nothing reaches upstream either way.
		ctx.Log().Debugf("deny reply not sent: %v", err)
	}
	return api.Stop
}
