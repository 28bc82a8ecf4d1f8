package rewrite

import (
	"regexp"
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
	"github.com/moeproxy/moe/shared/variables"
)

// Config is the rewrite config.
type Config struct {
	// Phase is "after_route" (default: the route was chosen on the original
	// request, as with Envoy's prefix_rewrite) or "before_route" (Envoy
	// matches the route again on the rewritten request).
	Phase string `json:"phase"`
	// Match selects the requests rewritten (default: every request).
	Match *match.Match `json:"match"`
	// Path rewrites the path (the part before '?').
	Path *PathRewrite `json:"path"`
	// Host replaces the :authority ("backend.internal", "api:8443").
	Host string `json:"host"`
	// Query changes query parameters.
	Query *QueryRewrite `json:"query"`
	// OriginalPathHeader receives the :path as it was when the path changed
	// (default "x-envoy-original-path", as Envoy's route rewrites; "" = none).
	OriginalPathHeader string `json:"original_path_header"`
	// InvalidPathStatus answers a path that cannot be normalized (a '%' not
	// followed by two hex digits) when normalize is on (default 400).
	InvalidPathStatus int `json:"invalid_path_status"`

	compiled
}

// PathRewrite is one of a prefix or a regex rewrite, after normalization.
type PathRewrite struct {
	// Prefix: a path starting with it gets Replacement instead of it
	// ("/api/v1/" -> "/v1/"); other paths are left alone.
	Prefix string `json:"prefix"`
	// Regex (RE2): every match in the path is replaced by Replacement, where
	// \1..\9 are capture groups and \0 the whole match (Envoy's
	// regex_rewrite). A path without a match is left alone.
	Regex string `json:"regex"`
	// Replacement for Prefix or Regex.
	Replacement string `json:"replacement"`
	// Normalize the path of every selected request before rewriting
	// (default true): decode percent-encoded unreserved characters
	// (A-Z a-z 0-9 - . _ ~), upper-case the other escapes, remove "." and
	// ".." segments (RFC 3986 5.2.4). Encoded slashes (%2F) stay encoded.
	Normalize *bool `json:"normalize"`
	// MergeSlashes collapses "//" into "/" while normalizing (default false,
	// as Envoy's merge_slashes).
	MergeSlashes bool `json:"merge_slashes"`
}

// QueryRewrite changes query parameters, in this order: remove, set, add.
// Names are compared decoded; values are templates, percent-encoded when
// written; parameters the rewrite does not touch keep their bytes and order.
type QueryRewrite struct {
	// Remove drops every occurrence of these parameters.
	Remove []string `json:"remove"`
	// Set gives a parameter exactly one value: the first occurrence is
	// replaced in place, later ones dropped; appended when absent.
	Set []Param `json:"set"`
	// Add appends a parameter (existing occurrences stay).
	Add []Param `json:"add"`
}

// Param is a query parameter and the template of its value.
type Param struct {
	// Name of the parameter.
	Name string `json:"name"`
	// Value is a variable template rendered per request ("v2", "$header_x-user").
	Value *variables.Template `json:"value"`
}

func newConfig() any {
	return &Config{Phase: "after_route", OriginalPathHeader: "x-envoy-original-path", InvalidPathStatus: 400}
}

// Validate checks the config and compiles the regex rewrite.
func (c *Config) Validate() error {
	if err := api.CheckOneOf("phase", c.Phase, "after_route", "before_route"); err != nil {
		return err
	}
	if c.Path == nil && c.Host == "" && c.Query == nil {
		return api.FieldErrorf("path", "give path, host or query: the plugin would do nothing")
	}
	if c.OriginalPathHeader != "" {
		if err := api.CheckHeaderName("original_path_header", c.OriginalPathHeader); err != nil {
			return err
		}
	}
	if err := api.CheckStatus("invalid_path_status", c.InvalidPathStatus); err != nil {
		return err
	}
	if err := c.checkPath(); err != nil {
		return err
	}
	if c.Host != "" {
		if err := checkHost(c.Host); err != nil {
			return err
		}
	}
	if q := c.Query; q != nil {
		if len(q.Remove) == 0 && len(q.Set) == 0 && len(q.Add) == 0 {
			return api.FieldErrorf("query", "give remove, set or add")
		}
		for i, n := range q.Remove {
			if err := checkParamName(api.Field("query.remove", i), n); err != nil {
				return err
			}
		}
		for _, l := range []struct {
			field string
			ps    []Param
		}{{"query.set", q.Set}, {"query.add", q.Add}} {
			for i, p := range l.ps {
				if err := checkParamName(api.Field(l.field, i, "name"), p.Name); err != nil {
					return err
				}
				if p.Value == nil {
					return api.FieldErrorf(api.Field(l.field, i, "value"), "is required")
				}
			}
		}
	}
	return nil
}

func (c *Config) checkPath() error {
	p := c.Path
	if p == nil {
		return nil
	}
	normalize := p.Normalize == nil || *p.Normalize
	switch {
	case p.Prefix != "" && p.Regex != "":
		return api.FieldErrorf("path", "give prefix or regex, not both")
	case p.Prefix == "" && p.Regex == "":
		if p.Replacement != "" {
			return api.FieldErrorf("path.replacement", "needs prefix or regex")
		}
		if !normalize {
			return api.FieldErrorf("path", "give prefix or regex, or normalize")
		}
	}
	if p.Prefix != "" && !strings.HasPrefix(p.Prefix, "/") {
		return api.FieldErrorf("path.prefix", "must start with '/'")
	}
	if strings.ContainsAny(p.Prefix, "?#") {
		return api.FieldErrorf("path.prefix", "is matched on the path without the query: no '?' or '#'")
	}
	if err := checkPathChars("path.replacement", p.Replacement); err != nil {
		return err
	}
	if p.Regex != "" {
		re, err := regexp.Compile(p.Regex)
		if err != nil {
			return api.FieldErrorf("path.regex", "%v", err)
		}
		parts, err := parseSubstitution(p.Replacement, re.NumSubexp())
		if err != nil {
			return api.FieldErrorf("path.replacement", "%v", err)
		}
		c.re, c.sub = re, parts
	}
	return nil
}

// checkPathChars refuses what a replacement must not bring into a path:
// a query or fragment start, spaces and control characters.
func checkPathChars(field, s string) error {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '?' || ch == '#' {
			return api.FieldErrorf(field, "must not contain %q: change the query with query", ch)
		}
		if ch <= ' ' || ch >= 0x7f {
			return api.FieldErrorf(field, "must not contain spaces, control or non-ASCII characters (percent-encode them)")
		}
	}
	return nil
}

// checkHost accepts a host[:port] as the :authority (RFC 3986 reg-name, IPv4,
// [IPv6]) without userinfo, path or spaces.
func checkHost(h string) error {
	if len(h) > 255 {
		return api.FieldErrorf("host", "is longer than 255 characters")
	}
	for i := 0; i < len(h); i++ {
		ch := h[i]
		ok := 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' ||
			strings.IndexByte("-._~!$&'()*+,;=:[]", ch) >= 0
		if !ok {
			return api.FieldErrorf("host", "%q: not a valid host[:port] (character %q)", h, ch)
		}
	}
	return nil
}

func checkParamName(field, n string) error {
	if n == "" {
		return api.FieldErrorf(field, "is required")
	}
	for i := 0; i < len(n); i++ {
		if ch := n[i]; ch < ' ' || ch == 0x7f {
			return api.FieldErrorf(field, "must not contain control characters")
		}
	}
	return nil
}
