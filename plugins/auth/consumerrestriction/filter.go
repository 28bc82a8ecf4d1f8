// Package consumerrestriction is the consumer-restriction plugin: RBAC on the
// consumer set by an earlier auth plugin (by name or group, optionally per
// method and path).
package consumerrestriction

import (
	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "consumer-restriction"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "allow/deny consumers by name or group, optionally per method and path (run after an auth plugin)",
		NewConfig:   newConfig,
		// Stateless: one filter per config, no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// AfterRoute like the auth plugins, so it runs after them in chain order.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
}

type filter Config

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := (*Config)(f)
	consumer := ctx.Consumer()
	if consumer == nil {
		c.stats.Denied(reasonNoConsumer)
		c.unauth.Send(ctx)
		return api.Stop
	}
	allow, reason := c.decide(consumer, h)
	if allow {
		c.stats.Allowed()
		return api.Continue
	}
	c.stats.Denied(reason)
	switch {
	case reason == reasonBadPath:
		c.badPath.Send(ctx)
	case authn.IsAnonymous(consumer):
		c.unauth.Send(ctx)
	default:
		c.denied.Send(ctx)
	}
	return api.Stop
}

// decide applies the rules: a matching deny rule wins, then a matching allow
// rule, then the default action.
func (c *Config) decide(consumer *api.Consumer, h api.RequestHeaderMap) (bool, string) {
	anonymous := authn.IsAnonymous(consumer)
	method := h.Method()
	var p string
	pathDone := false
	allowed := false
	for i := range c.rules {
		r := &c.rules[i]
		if (allowed && !r.deny) || !r.matchSubject(consumer, anonymous) || !r.matchMethod(method) {
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
