package variables

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

func reqHeaders(ctx api.Context) api.RequestHeaderMap {
	return ctx.Receiver().GetRequestHeaders()
}

func init() {
	registerPrefix("header_", func(ctx api.Context, name string) (string, bool) {
		h := reqHeaders(ctx)
		if h == nil {
			return "", false
		}
		return h.Get(name)
	}, true)
	registerPrefix("resp_header_", func(ctx api.Context, name string) (string, bool) {
		h := ctx.Sender().GetResponseHeaders()
		if h == nil {
			return "", false
		}
		return h.Get(name)
	}, true)
	RegisterPrefix("arg_", func(ctx api.Context, name string) (string, bool) {
		h := reqHeaders(ctx)
		if h == nil {
			return "", false
		}
		return QueryArg(h.Path(), name)
	})
	RegisterPrefix("cookie_", func(ctx api.Context, name string) (string, bool) {
		h := reqHeaders(ctx)
		if h == nil {
			return "", false
		}
		return Cookie(h.Values("cookie"), name)
	})
	Register("method", pseudo(func(h api.RequestHeaderMap) string { return h.Method() }))
	Register("path", pseudo(func(h api.RequestHeaderMap) string {
		p := h.Path()
		if i := strings.IndexByte(p, '?'); i >= 0 {
			p = p[:i]
		}
		return p
	}))
	Register("request_uri", pseudo(func(h api.RequestHeaderMap) string { return h.Path() }))
	Register("query", pseudo(func(h api.RequestHeaderMap) string {
		p := h.Path()
		if i := strings.IndexByte(p, '?'); i >= 0 {
			return p[i+1:]
		}
		return ""
	}))
	Register("host", pseudo(func(h api.RequestHeaderMap) string { return h.Host() }))
	Register("scheme", pseudo(func(h api.RequestHeaderMap) string { return h.Scheme() }))
	// $remote_addr is the client IP without the port, as in nginx: Envoy's
	// downstream address is "ip:port", and a key built on it would count per
	// connection instead of per client. $remote_port has the port.
	Register("remote_addr", func(ctx api.Context) (string, bool) {
		ip, _ := SplitAddress(ctx.Receiver().RequestInfo().DownstreamRemoteAddress())
		return ip, ip != ""
	})
	Register("remote_port", func(ctx api.Context) (string, bool) {
		_, port := SplitAddress(ctx.Receiver().RequestInfo().DownstreamRemoteAddress())
		return port, port != ""
	})
	Register("route_name", func(ctx api.Context) (string, bool) {
		n := ctx.Receiver().Route().RouteName()
		return n, n != ""
	})
	Register("cluster", func(ctx api.Context) (string, bool) {
		n := ctx.Receiver().Route().ClusterName()
		return n, n != ""
	})
	Register("consumer", func(ctx api.Context) (string, bool) {
		if c := ctx.Consumer(); c != nil {
			return c.Name, true
		}
		return "", false
	})
	Register("consumer_group", func(ctx api.Context) (string, bool) {
		if c := ctx.Consumer(); c != nil && c.Group != "" {
			return c.Group, true
		}
		return "", false
	})
	Register("status", func(ctx api.Context) (string, bool) {
		if h := ctx.Sender().GetResponseHeaders(); h != nil {
			if s := h.Status(); s != 0 {
				return strconv.Itoa(s), true
			}
		}
		if c := ctx.Receiver().RequestInfo().ResponseCode(); c != 0 {
			return strconv.Itoa(c), true
		}
		return "", false
	})
	Register("duration_ms", func(ctx api.Context) (string, bool) {
		d := ctx.Receiver().RequestInfo().Duration()
		return strconv.FormatInt(d.Milliseconds(), 10), true
	})
	Register("request_id", func(ctx api.Context) (string, bool) {
		id := ctx.RequestID()
		return id, id != ""
	})
	Register("plugin", func(ctx api.Context) (string, bool) { return ctx.PluginName(), true })
}

func pseudo(f func(api.RequestHeaderMap) string) func(api.Context) (string, bool) {
	return func(ctx api.Context) (string, bool) {
		h := reqHeaders(ctx)
		if h == nil {
			return "", false
		}
		v := f(h)
		return v, v != ""
	}
}

// QueryArg returns the first value of the query parameter name in path (":path" with its
// query) without building a map. Names and values are percent-decoded only when they contain
// an escape.
func QueryArg(path, name string) (string, bool) {
	i := strings.IndexByte(path, '?')
	if i < 0 {
		return "", false
	}
	q := path[i+1:]
	if j := strings.IndexByte(q, '#'); j >= 0 {
		q = q[:j]
	}
	for q != "" {
		var kv string
		kv, q, _ = strings.Cut(q, "&")
		k, v, _ := strings.Cut(kv, "=")
		if k == name || (strings.ContainsAny(k, "%+") && unescape(k) == name) {
			return unescape(v), true
		}
	}
	return "", false
}

func unescape(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	u, err := url.QueryUnescape(s)
	if err != nil {
		return s
	}
	return u
}

// Cookie returns the value of cookie name from the Cookie header lines (the first match;
// surrounding double quotes are removed).
func Cookie(lines []string, name string) (string, bool) {
	for _, line := range lines {
		for line != "" {
			var kv string
			kv, line, _ = strings.Cut(line, ";")
			kv = strings.TrimSpace(kv)
			k, v, ok := strings.Cut(kv, "=")
			if ok && k == name {
				if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
					v = v[1 : len(v)-1]
				}
				return v, true
			}
		}
	}
	return "", false
}

// SplitAddress splits an Envoy address ("192.0.2.1:5555", "[2001:db8::1]:443")
// into the IP (IPv6 without brackets) and the port. Anything else (a bare IP,
// a pipe path, a malformed value) is returned whole with an empty port.
// Slicing only: no allocation per request.
func SplitAddress(a string) (ip, port string) {
	if strings.HasPrefix(a, "[") {
		i := strings.IndexByte(a, ']')
		if i < 0 {
			return a, ""
		}
		if rest := a[i+1:]; len(rest) > 1 && rest[0] == ':' {
			return a[1:i], rest[1:]
		}
		return a[1:i], ""
	}
	// Exactly one colon: IPv4:port. A bare IPv6 address has several.
	if i := strings.IndexByte(a, ':'); i >= 0 && strings.LastIndexByte(a, ':') == i {
		return a[:i], a[i+1:]
	}
	return a, ""
}
