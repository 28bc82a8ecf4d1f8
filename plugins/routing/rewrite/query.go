package rewrite

import (
	"net/url"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// rewriteQuery applies remove, set and add to a raw query string (without
// '?'). Parameters are split at '&'; a parameter's name is the part before
// the first '=', compared percent-decoded ("+" is a space) when it decodes,
// as written otherwise. Untouched parameters, empty ones ("a&&b") and
// malformed escapes are kept byte for byte.
func (c *Config) rewriteQuery(ctx api.Context, q string) string {
	var out []string
	if q != "" {
		out = strings.Split(q, "&")
	}
	if len(c.remove) > 0 {
		kept := out[:0]
		for _, kv := range out {
			if !c.remove[paramName(kv)] {
				kept = append(kept, kv)
			}
		}
		out = kept
	}
	for _, s := range c.set {
		entry := s.encoded + "=" + url.QueryEscape(s.p.Value.Render(ctx))
		placed := false
		kept := out[:0]
		for _, kv := range out {
			if paramName(kv) != s.name {
				kept = append(kept, kv)
			} else if !placed {
				kept = append(kept, entry)
				placed = true
			}
		}
		out = kept
		if !placed {
			out = append(out, entry)
		}
	}
	for _, a := range c.add {
		out = append(out, a.encoded+"="+url.QueryEscape(a.p.Value.Render(ctx)))
	}
	return strings.Join(out, "&")
}

func paramName(kv string) string {
	n := kv
	if i := strings.IndexByte(kv, '='); i >= 0 {
		n = kv[:i]
	}
	if strings.ContainsAny(n, "%+") {
		if d, err := url.QueryUnescape(n); err == nil {
			return d
		}
	}
	return n
}
