package jwtauth

import (
	"strings"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
	"github.com/moeproxy/moe/shared/variables"
)

// filter is stateless and shared by all requests of a config version.
type filter struct{ rt *runtime }

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	rt := f.rt
	if rt.anonymous != nil && consumer.Authenticated(ctx) {
		// With anonymous access on, auth plugins combine with OR (Kong style):
		// an earlier one already authenticated the caller. The claim headers
		// this plugin vouches for must still not come from the client.
		rt.clearForwarded(h)
		consumer.Forward(ctx, h, rt.consumerHeader)
		rt.skippedC.Inc(1)
		return api.Continue
	}
	tok, _, found, ambiguous := rt.extract(h)
	if ambiguous {
		return rt.deny(ctx, rMalformed)
	}
	if !found {
		if rt.anonymous != nil {
			rt.clearForwarded(h)
			consumer.Identify(ctx, h, rt.anonymous, rt.consumerHeader)
			rt.anonC.Inc(1)
			return api.Continue
		}
		return rt.deny(ctx, rMissing)
	}
	sc := getScratch()
	defer putScratch(sc)
	cl, r, ok := rt.verify(tok, sc)
	if !ok {
		return rt.deny(ctx, r)
	}
	var who *api.Consumer
	if rt.consumerClaim != "" {
		name, ok := claimValue(cl, nil, rt.consumerClaim)
		switch {
		case !ok:
			return rt.deny(ctx, rUnknownConsumer)
		case rt.consumers != nil:
			if who = rt.consumers[name]; who == nil {
				return rt.deny(ctx, rUnknownConsumer)
			}
		default:
			who = &api.Consumer{Name: name}
		}
	} else if rt.consumers != nil {
		// A route listed consumers, but neither it nor its parent names the
		// claim that selects them: refuse rather than pass unmapped.
		return rt.deny(ctx, rUnknownConsumer)
	}
	for i := range rt.forward {
		fc := &rt.forward[i]
		if val, ok := claimValue(cl, fc.path, fc.full); ok {
			_ = h.Set(fc.header, val)
		} else {
			_ = h.Del(fc.header) // never let a client supply a claim header
		}
	}
	if rt.hide {
		rt.hideTokens(h)
	}
	consumer.Identify(ctx, h, who, rt.consumerHeader)
	rt.allowedC.Inc(1)
	return api.Continue
}

func (rt *runtime) deny(ctx api.Context, r reason) api.Status {
	rt.denied[r].Inc(1)
	rp := rt.replies[r]
	return rp.Send(ctx)
}

func (rt *runtime) clearForwarded(h api.RequestHeaderMap) {
	for i := range rt.forward {
		_ = h.Del(rt.forward[i].header)
	}
}

// extract returns the token from the first configured source present.
// ambiguous: the token header came twice (which one a proxy or the upstream
// would read differs, so neither is trusted).
func (rt *runtime) extract(h api.RequestHeaderMap) (tok string, src *tokenSource, found, ambiguous bool) {
	for i := range rt.from {
		s := &rt.from[i]
		var v string
		var ok bool
		switch {
		case s.header != "":
			vs := h.Values(s.header)
			if len(vs) > 1 {
				return "", s, true, true
			}
			if ok = len(vs) == 1; ok {
				v = vs[0]
			}
			if ok && s.prefix != "" {
				if len(v) < len(s.prefix) || !strings.EqualFold(v[:len(s.prefix)], s.prefix) {
					ok = false // e.g. "Basic ..." is not ours
				} else {
					v = v[len(s.prefix):]
				}
			}
			v = strings.TrimSpace(v)
		case s.query != "":
			v, ok = variables.QueryArg(h.Path(), s.query)
		default:
			v, ok = variables.Cookie(h.Values("cookie"), s.cookie)
		}
		if ok {
			return v, s, true, false
		}
	}
	return "", nil, false, false
}

// hideTokens removes the token from every configured source, not only the
// one it was read from: a second copy (the same token in a header and in the
// query, say) must not reach the upstream either. A header source with a
// prefix only loses values carrying that prefix ("Basic ..." is not ours).
func (rt *runtime) hideTokens(h api.RequestHeaderMap) {
	for i := range rt.from {
		s := &rt.from[i]
		switch {
		case s.header != "":
			vs := h.Values(s.header)
			if len(vs) == 0 {
				continue
			}
			if s.prefix == "" {
				_ = h.Del(s.header)
				continue
			}
			var kept []string
			for _, v := range vs {
				if len(v) < len(s.prefix) || !strings.EqualFold(v[:len(s.prefix)], s.prefix) {
					kept = append(kept, v)
				}
			}
			if len(kept) == len(vs) {
				continue
			}
			_ = h.Del(s.header)
			for _, v := range kept {
				_ = h.Add(s.header, v)
			}
		case s.query != "":
			if p := h.Path(); strings.IndexByte(p, '?') >= 0 {
				if np := authn.RemoveQueryParam(p, s.query); np != p {
					_ = h.SetPath(np)
				}
			}
		default:
			lines := h.Values("cookie")
			if len(lines) == 0 {
				continue
			}
			kept := make([]string, 0, len(lines))
			changed := false
			for _, l := range lines {
				rest, left := authn.RemoveCookie(l, s.cookie)
				if rest != l {
					changed = true
				}
				if left {
					kept = append(kept, rest)
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
