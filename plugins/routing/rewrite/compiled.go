package rewrite

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// compiled is what Validate/Init build: the regex and its parsed
// substitution, lower-cased names, encoded query names, the metrics.
type compiled struct {
	re             *regexp.Regexp
	sub            []subPart
	normalize      bool
	origHeader     string
	remove         map[string]bool
	set, add       []param
	refusalHeaders api.Headers

	rewritten, pathRewritten, hostRewritten, queryRewritten api.Counter
	normalized, invalidPath, notMatched                     api.Counter
}

type param struct {
	name, encoded string // decoded (compared) and encoded (written) name
	p             *Param
}

// subPart is a literal or a capture group reference of a substitution.
type subPart struct {
	lit   string
	group int // -1: literal
}

// parseSubstitution reads Envoy's regex_rewrite substitution (RE2::Rewrite
// syntax): \0..\9 name capture groups, \\ is a backslash, any other
// backslash is an error, as RE2::CheckRewriteString refuses it; a group the
// regex does not have is an error too.
func parseSubstitution(s string, groups int) ([]subPart, error) {
	var parts []subPart
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			lit.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return nil, fmt.Errorf("ends with a lone backslash (write \\\\ for a backslash)")
		}
		i++
		switch c := s[i]; {
		case c == '\\':
			lit.WriteByte('\\')
		case '0' <= c && c <= '9':
			n := int(c - '0')
			if n > groups {
				return nil, fmt.Errorf("\\%d refers to a capture group the regex does not have (it has %d)", n, groups)
			}
			if lit.Len() > 0 {
				parts = append(parts, subPart{lit: lit.String(), group: -1})
				lit.Reset()
			}
			parts = append(parts, subPart{group: n})
		default:
			return nil, fmt.Errorf("\\%c: only \\0..\\9 and \\\\ are allowed after a backslash", c)
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, subPart{lit: lit.String(), group: -1})
	}
	return parts, nil
}

// Init defines the metrics and prepares the query names.
func (c *Config) Init(env api.ConfigEnv) error {
	m := env.Metrics()
	c.normalize = c.Path != nil && (c.Path.Normalize == nil || *c.Path.Normalize)
	c.origHeader = strings.ToLower(c.OriginalPathHeader)
	if q := c.Query; q != nil {
		c.remove = make(map[string]bool, len(q.Remove))
		for _, n := range q.Remove {
			c.remove[n] = true
		}
		for i := range q.Set {
			c.set = append(c.set, param{name: q.Set[i].Name, encoded: url.QueryEscape(q.Set[i].Name), p: &q.Set[i]})
		}
		for i := range q.Add {
			c.add = append(c.add, param{name: q.Add[i].Name, encoded: url.QueryEscape(q.Add[i].Name), p: &q.Add[i]})
		}
	}
	c.refusalHeaders = api.Headers{"content-type": {"text/plain; charset=utf-8"}}
	c.rewritten = m.Counter("rewritten")
	c.pathRewritten = m.Counter("path_rewritten")
	c.hostRewritten = m.Counter("host_rewritten")
	c.queryRewritten = m.Counter("query_rewritten")
	c.normalized = m.Counter("path_normalized")
	c.invalidPath = m.Counter("invalid_path")
	c.notMatched = m.Counter("not_matched")
	return nil
}

// Needs puts the plugin in the configured phase.
func (c *Config) Needs() api.Needs {
	if c.Phase == "before_route" {
		return api.Needs{Phase: api.BeforeRoute}
	}
	return api.Needs{Phase: api.AfterRoute}
}
