package keyauth

import (
	"strings"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
	"github.com/moeproxy/moe/shared/variables"
)

type filter Config

// find outcome.
const (
	found = iota
	absent
	bad // oversized, control characters, or two different values
)

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := f.compiled
	if c.anonymous != nil && consumer.Authenticated(ctx) {
		consumer.Forward(ctx, h, c.header)
		c.stats.Skipped()
		return api.Continue
	}
	key, res := c.find(h)
	switch res {
	case absent:
		if c.anonymous != nil {
			c.stats.Anonymous()
			consumer.Identify(ctx, h, c.anonymous, c.header)
			return api.Continue
		}
		return c.deny(ctx, "missing", c.missing)
	case bad:
		return c.deny(ctx, "malformed", c.malformed)
	}
	who := c.index.lookup(key)
	if who == nil {
		return c.deny(ctx, "invalid", c.invalid)
	}
	if c.hide {
		c.hideAll(h)
	}
	c.stats.Allowed()
	consumer.Identify(ctx, h, who, c.header)
	return api.Continue
}

func (c *compiled) deny(ctx api.Context, reason string, r *authn.Reply) api.Status {
	c.stats.Denied(reason)
	return r.Send(ctx)
}

// find returns the key from the first configured source that has one.
func (c *compiled) find(h api.RequestHeaderMap) (string, int) {
	for _, s := range c.sources {
		var v string
		switch s.kind {
		case srcHeader:
			// Get first: absent sources cost nothing.
			if _, ok := h.Get(s.name); !ok {
				continue
			}
			vs := h.Values(s.name)
			// Two different keys in one request: refuse rather than guess which one
			// a later hop would use.
			for _, o := range vs[1:] {
				if o != vs[0] {
					return "", bad
				}
			}
			v = vs[0]
		case srcQuery:
			var ok bool
			if v, ok = variables.QueryArg(h.Path(), s.name); !ok {
				continue
			}
		case srcCookie:
			if _, ok := h.Get("cookie"); !ok {
				continue
			}
			var ok bool
			if v, ok = variables.Cookie(h.Values("cookie"), s.name); !ok {
				continue
			}
		}
		if v == "" {
			continue // "apikey=" counts as absent, as in APISIX and Kong
		}
		if len(v) > c.maxKey || !consumer.SafeHeaderValue(v) {
			return "", bad
		}
		return v, found
	}
	return "", absent
}

// hideAll removes the key from every configured source, not only the one it
// was read from, so a second copy cannot reach the upstream.
func (c *compiled) hideAll(h api.RequestHeaderMap) {
	for _, s := range c.sources {
		switch s.kind {
		case srcHeader:
			if _, ok := h.Get(s.name); ok {
				_ = h.Del(s.name)
			}
		case srcQuery:
			if p := h.Path(); strings.IndexByte(p, '?') >= 0 {
				if np := authn.RemoveQueryParam(p, s.name); np != p {
					_ = h.SetPath(np)
				}
			}
		case srcCookie:
			if _, ok := h.Get("cookie"); !ok {
				continue
			}
			lines := h.Values("cookie")
			var kept []string
			changed := false
			for _, l := range lines {
				nl, left := authn.RemoveCookie(l, s.name)
				if nl != l {
					changed = true
				}
				if left {
					kept = append(kept, nl)
				}
			}
			if !changed {
				continue
			}
			_ = h.Del("cookie")
			for _, l := range kept {
				_ = h.Add("cookie", l)
			}
		}
	}
}
