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
