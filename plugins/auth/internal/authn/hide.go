package authn

import (
	"net/url"
	"strings"
)

// RemoveQueryParam returns path (":path", with its query) without the query
// parameter name (all occurrences, also percent-encoded names). The rest of
// the query is kept byte for byte.
func RemoveQueryParam(path, name string) string {
	i := strings.IndexByte(path, '?')
	if i < 0 {
		return path
	}
	base, q := path[:i], path[i+1:]
	frag := ""
	if j := strings.IndexByte(q, '#'); j >= 0 {
		q, frag = q[:j], q[j:]
	}
	var kept []string
	removed := false
	for _, kv := range strings.Split(q, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if k == name || (strings.ContainsAny(k, "%+") && unescape(k) == name) {
			removed = true
			continue
		}
		kept = append(kept, kv)
	}
	if !removed {
		return path
	}
	if len(kept) == 0 {
		return base + frag
	}
	return base + "?" + strings.Join(kept, "&") + frag
}

func unescape(s string) string {
	u, err := url.QueryUnescape(s)
	if err != nil {
		return s
	}
	return u
}

// RemoveCookie returns a Cookie header line without the cookie name, and
// whether anything is left.
func RemoveCookie(line, name string) (string, bool) {
	parts := strings.Split(line, ";")
	kept := parts[:0]
	for _, p := range parts {
		k, _, _ := strings.Cut(strings.TrimSpace(p), "=")
		if k == name {
			continue
		}
		if strings.TrimSpace(p) != "" {
			kept = append(kept, strings.TrimSpace(p))
		}
	}
	return strings.Join(kept, "; "), len(kept) > 0
}
