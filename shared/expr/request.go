package expr

import (
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/interpreter"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// request is the activation of one evaluation: names resolve lazily against
// the plugin's context.
type request struct{ ctx api.Context }

var _ interpreter.Activation = (*request)(nil)

func (r *request) ResolveName(name string) (any, bool) {
	a, ok := byName[name]
	if !ok {
		return nil, false
	}
	return a.get(r), true
}

func (r *request) Parent() interpreter.Activation { return nil }

// headers are the request headers (an empty map when there are none, e.g.
// in a log hook after an abort).
func (r *request) headers() api.RequestHeaderMap {
	if h := r.ctx.Receiver().GetRequestHeaders(); h != nil {
		return h
	}
	return emptyRequest{}
}

func (r *request) headerMap(response bool) *lazyMap {
	var h api.HeaderMap
	if response {
		if rh := r.ctx.Sender().GetResponseHeaders(); rh != nil {
			h = rh
		}
	} else if rh := r.ctx.Receiver().GetRequestHeaders(); rh != nil {
		h = rh
	}
	if h == nil {
		return newLazyMap(func(string) (string, bool) { return "", false }, func() map[string]string { return map[string]string{} })
	}
	return newLazyMap(
		func(k string) (string, bool) {
			vs := h.Values(strings.ToLower(k))
			if len(vs) == 0 {
				return "", false
			}
			return strings.Join(vs, ","), true
		},
		func() map[string]string {
			m := map[string]string{}
			h.Range(func(k, v string) bool {
				if old, ok := m[k]; ok {
					v = old + "," + v
				}
				m[k] = v
				return true
			})
			return m
		})
}

func (r *request) queryMap() *lazyMap {
	path := r.headers().Path()
	return newLazyMap(
		func(k string) (string, bool) { return variables.QueryArg(path, k) },
		func() map[string]string {
			m := map[string]string{}
			q := query(path)
			for q != "" {
				var kv string
				kv, q, _ = strings.Cut(q, "&")
				k, _, _ := strings.Cut(kv, "=")
				if k == "" {
					continue
				}
				if v, ok := variables.QueryArg(path, unescapeName(k)); ok {
					if _, seen := m[unescapeName(k)]; !seen {
						m[unescapeName(k)] = v
					}
				}
			}
			return m
		})
}

func (r *request) cookieMap() *lazyMap {
	lines := r.headers().Values("cookie")
	return newLazyMap(
		func(k string) (string, bool) { return variables.Cookie(lines, k) },
		func() map[string]string {
			m := map[string]string{}
			for _, line := range lines {
				for _, kv := range strings.Split(line, ";") {
					k, _, ok := strings.Cut(strings.TrimSpace(kv), "=")
					if !ok || k == "" {
						continue
					}
					if _, seen := m[k]; !seen {
						m[k], _ = variables.Cookie(lines, k)
					}
				}
			}
			return m
		})
}

// varCache holds compiled variables by name: a name is resolved (and checked)
// once per process, then evaluated per request.
var varCache sync.Map // string -> variables.Var

func (r *request) varMap() *lazyMap {
	return newLazyMap(
		func(name string) (string, bool) {
			name = strings.TrimPrefix(name, "$")
			v, ok := varCache.Load(name)
			if !ok {
				c, err := variables.Compile(name)
				if err != nil {
					return "", false
				}
				v, _ = varCache.LoadOrStore(name, c)
			}
			return v.(variables.Var).Get(r.ctx)
		},
		// Variables are a family without a list: iterating yields none.
		func() map[string]string { return map[string]string{} })
}

func (r *request) remote() string {
	info := r.ctx.Receiver().RequestInfo()
	if info == nil {
		return ""
	}
	return info.DownstreamRemoteAddress()
}

func (r *request) status() int {
	if h := r.ctx.Sender().GetResponseHeaders(); h != nil {
		return h.Status()
	}
	return 0
}

func (r *request) consumerName() string {
	if c := r.ctx.Consumer(); c != nil {
		return c.Name
	}
	return ""
}

func (r *request) consumerGroup() string {
	if c := r.ctx.Consumer(); c != nil {
		return c.Group
	}
	return ""
}

func (r *request) consumerAttributes() *lazyMap {
	var attrs map[string]string
	if c := r.ctx.Consumer(); c != nil {
		attrs = c.Attributes
	}
	return newLazyMap(func(k string) (string, bool) { v, ok := attrs[k]; return v, ok },
		func() map[string]string {
			m := make(map[string]string, len(attrs))
			for k, v := range attrs {
				m[k] = v
			}
			return m
		})
}

func urlPath(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i]
	}
	return p
}

func query(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		q := p[i+1:]
		if j := strings.IndexByte(q, '#'); j >= 0 {
			q = q[:j]
		}
		return q
	}
	return ""
}

func unescapeName(k string) string {
	if u, err := decodeQueryComponent(k); err == nil {
		return u
	}
	return k
}

func splitAddress(a string) (string, string) { return variables.SplitAddress(a) }

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// emptyRequest is a RequestHeaderMap without headers.
type emptyRequest struct{ api.Headers }

func (emptyRequest) Method() string         { return "" }
func (emptyRequest) Path() string           { return "" }
func (emptyRequest) Host() string           { return "" }
func (emptyRequest) Scheme() string         { return "" }
func (emptyRequest) SetMethod(string) error { return nil }
func (emptyRequest) SetPath(string) error   { return nil }
func (emptyRequest) SetHost(string) error   { return nil }
