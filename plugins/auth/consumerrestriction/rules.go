package consumerrestriction

import (
	"fmt"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// rule is a compiled Rule.
type rule struct {
	deny        bool
	anyConsumer bool
	consumers   map[string]struct{}
	groups      map[string]struct{}
	methods     []string // upper case; nil = any
	paths       []pathMatcher
}

// compileRule checks one Rule (field is its path, "rules[2]") and compiles
// it.
func compileRule(r *Rule, field string) (rule, error) {
	out := rule{}
	if r.Action != "" {
		if err := api.CheckOneOf(field+".action", r.Action, actionAllow, actionDeny); err != nil {
			return out, err
		}
		out.deny = r.Action == actionDeny
	}
	if len(r.Consumers) == 0 && len(r.Groups) == 0 {
		return out, api.FieldErrorf(field, `needs consumers or groups (use consumers: ["*"] for any authenticated consumer)`)
	}
	for i, n := range r.Consumers {
		switch {
		case n == "*":
			out.anyConsumer = true
		case n == "" || strings.ContainsFunc(n, isCtl):
			return out, api.FieldErrorf(api.Field(field, "consumers", i), "empty or contains control characters")
		default:
			if out.consumers == nil {
				out.consumers = map[string]struct{}{}
			}
			out.consumers[n] = struct{}{}
		}
	}
	for i, g := range r.Groups {
		if g == "" || strings.ContainsFunc(g, isCtl) {
			return out, api.FieldErrorf(api.Field(field, "groups", i), "empty or contains control characters")
		}
		if out.groups == nil {
			out.groups = map[string]struct{}{}
		}
		out.groups[g] = struct{}{}
	}
	for i, m := range r.Methods {
		if m == "" || strings.ContainsFunc(m, func(c rune) bool { return !isTokenChar(c) }) {
			return out, api.FieldErrorf(api.Field(field, "methods", i), "%q is not an HTTP method token", m)
		}
		if m == "*" {
			out.methods = nil
			break
		}
		out.methods = append(out.methods, strings.ToUpper(m))
	}
	for i, p := range r.Paths {
		pm, err := compilePath(p)
		if err != nil {
			return out, api.FieldErrorf(api.Field(field, "paths", i), "%v", err)
		}
		if pm.any {
			out.paths = nil
			break
		}
		out.paths = append(out.paths, pm)
	}
	return out, nil
}

func isCtl(c rune) bool { return c < 0x20 || c == 0x7f }

// isTokenChar: RFC 9110 tchar.
func isTokenChar(c rune) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}

// pathMatcher matches exact, or prefix (with alsoExact for "/x/*" patterns).
type pathMatcher struct {
	any       bool
	exact     string
	prefix    string
	alsoExact string
}

func compilePath(p string) (pathMatcher, error) {
	switch {
	case p == "*":
		return pathMatcher{any: true}, nil
	case p == "" || p[0] != '/':
		return pathMatcher{}, fmt.Errorf("%q must start with '/' (or be \"*\")", p)
	case strings.ContainsAny(p, "?#%") || strings.ContainsFunc(p, isCtl):
		return pathMatcher{}, fmt.Errorf("%q must be a decoded path without query, fragment, '%%' or control characters", p)
	case strings.Contains(p[:len(p)-1], "*"):
		return pathMatcher{}, fmt.Errorf("%q: '*' is only allowed at the end", p)
	}
	if clean := normalizePathOrSame(p); clean != p && !strings.HasSuffix(p, "*") {
		return pathMatcher{}, fmt.Errorf("%q is not normalized (requests are matched as %q)", p, clean)
	}
	if strings.HasSuffix(p, "/*") {
		// "/admin/*" covers /admin too: a deny rule that missed the bare prefix
		// would be a bypass when the upstream serves both.
		return pathMatcher{prefix: p[:len(p)-1], alsoExact: p[:len(p)-2]}, nil
	}
	if strings.HasSuffix(p, "*") {
		return pathMatcher{prefix: p[:len(p)-1]}, nil
	}
	return pathMatcher{exact: p}, nil
}

func (m *pathMatcher) match(path string) bool {
	if m.prefix != "" {
		return strings.HasPrefix(path, m.prefix) || (m.alsoExact != "" && path == m.alsoExact)
	}
	return path == m.exact
}

// matchSubject: the consumer by name, its group, or "*" (any consumer except
// an anonymous one, which only matches by its name).
func (r *rule) matchSubject(c *api.Consumer, anonymous bool) bool {
	if r.anyConsumer && !anonymous {
		return true
	}
	if _, ok := r.consumers[c.Name]; ok {
		return true
	}
	if c.Group != "" {
		if _, ok := r.groups[c.Group]; ok {
			return true
		}
	}
	return false
}

func (r *rule) matchMethod(m string) bool {
	if r.methods == nil {
		return true
	}
	for _, x := range r.methods {
		// Case-insensitive: an upstream that treats "get" as GET must not get
		// around a deny rule.
		if strings.EqualFold(x, m) {
			return true
		}
	}
	return false
}

func (r *rule) matchPath(path string) bool {
	if r.paths == nil {
		return true
	}
	for i := range r.paths {
		if r.paths[i].match(path) {
			return true
		}
	}
	return false
}
