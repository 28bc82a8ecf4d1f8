package cors

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// Config of the cors plugin. See README.md for the reference.
type Config struct {
	// AllowOrigins are the origins allowed to read responses: exact origins
	// ("https://app.example.com", "http://localhost:3000", "null"), wildcard
	// subdomains ("https://*.example.com": any subdomain, at any depth, not
	// the apex) or "*" (any origin; not with allow_credentials).
	AllowOrigins []string `json:"allow_origins"`
	// AllowOriginRegexes are RE2 expressions matched against the whole
	// origin ("^https://[a-z0-9-]+\\.example\\.(com|org)$"; anchors are
	// implied).
	AllowOriginRegexes []string `json:"allow_origin_regexes"`
	// AllowMethods a preflight may ask for (exact, case-sensitive as in
	// Fetch); "*" allows any. Default GET, HEAD, POST.
	AllowMethods []string `json:"allow_methods"`
	// AllowHeaders are the request headers a preflight may ask for
	// (case-insensitive); "*" allows any (including Authorization, which
	// Fetch never covers by a literal "*": the plugin echoes the list asked
	// for).
	AllowHeaders []string `json:"allow_headers"`
	// ExposeHeaders are the response headers the page may read beyond the
	// CORS-safelisted ones; "*" (not with allow_credentials) exposes all.
	ExposeHeaders []string `json:"expose_headers"`
	// AllowCredentials lets the page send cookies / HTTP auth and read the
	// answer (Access-Control-Allow-Credentials: true).
	AllowCredentials bool `json:"allow_credentials"`
	// MaxAge is how long, in seconds, a browser may cache a preflight's
	// answer (0: no Access-Control-Max-Age header, the browser's default of
	// 5 s). Browsers cap it (Chromium at 7200, Firefox at 86400).
	MaxAge int `json:"max_age"`
	// PreflightStatus answers an allowed preflight (204 or 200).
	PreflightStatus int `json:"preflight_status"`
	// RefusedStatus answers a preflight that is not allowed (origin, method
	// or a header), without CORS headers.
	RefusedStatus int `json:"refused_status"`

	compiled
}

func newConfig() any {
	return &Config{
		AllowMethods:    []string{"GET", "HEAD", "POST"},
		PreflightStatus: 204,
		RefusedStatus:   403,
	}
}

const (
	maxMaxAge = 86400
	maxList   = 1000
)

// Validate checks every list entry and the combinations Fetch forbids.
func (c *Config) Validate() error {
	if len(c.AllowOrigins) == 0 && len(c.AllowOriginRegexes) == 0 {
		return api.FieldErrorf("allow_origins", "is required: list the allowed origins (or \"*\"), or set allow_origin_regexes")
	}
	if err := checkLen("allow_origins", len(c.AllowOrigins)); err != nil {
		return err
	}
	for i, o := range c.AllowOrigins {
		f := api.Field("allow_origins", i)
		if o == "*" {
			if c.AllowCredentials {
				return api.FieldErrorf(f, "\"*\" cannot be combined with allow_credentials: Fetch refuses a wildcard origin for credentialed requests, and echoing any origin would let every site read users' data; list the origins (or patterns such as \"https://*.example.com\")")
			}
			continue
		}
		if _, err := parseOrigin(o); err != nil {
			return api.FieldErrorf(f, "%v", err)
		}
	}
	if err := checkLen("allow_origin_regexes", len(c.AllowOriginRegexes)); err != nil {
		return err
	}
	for i, re := range c.AllowOriginRegexes {
		if _, err := regexp.Compile(anchor(re)); err != nil {
			return api.FieldErrorf(api.Field("allow_origin_regexes", i), "%v", err)
		}
	}
	if len(c.AllowMethods) == 0 {
		return api.FieldErrorf("allow_methods", "must list at least one method (or \"*\")")
	}
	for i, m := range c.AllowMethods {
		if m != "*" && !api.ValidHeaderName(m) { // a method is a token, like a header name
			return api.FieldErrorf(api.Field("allow_methods", i), "%q is not a method (an RFC 9110 token)", m)
		}
	}
	for _, l := range []struct {
		field string
		v     []string
	}{{"allow_headers", c.AllowHeaders}, {"expose_headers", c.ExposeHeaders}} {
		if err := checkLen(l.field, len(l.v)); err != nil {
			return err
		}
		for i, h := range l.v {
			if h == "*" {
				continue
			}
			if err := api.CheckHeaderName(api.Field(l.field, i), h); err != nil {
				return err
			}
		}
	}
	if c.AllowCredentials {
		for i, h := range c.ExposeHeaders {
			if h == "*" {
				return api.FieldErrorf(api.Field("expose_headers", i), "\"*\" is a literal header name for credentialed requests (Fetch): list the headers to expose")
			}
		}
	}
	if err := api.CheckRange("max_age", c.MaxAge, 0, maxMaxAge); err != nil {
		return err
	}
	if c.PreflightStatus != 200 && c.PreflightStatus != 204 {
		return api.FieldErrorf("preflight_status", "must be 200 or 204, got %d", c.PreflightStatus)
	}
	return api.CheckStatus("refused_status", c.RefusedStatus)
}

func checkLen(field string, n int) error {
	if n > maxList {
		return api.FieldErrorf(field, "at most %d entries, got %d", maxList, n)
	}
	return nil
}

// anchor makes a regex match the whole origin.
func anchor(re string) string { return "^(?:" + re + ")$" }

// origin is a parsed allow_origins entry.
type origin struct {
	exact string // the serialized origin, lower case ("" for a wildcard)
	// A wildcard "scheme://*.rest": an origin "scheme://<labels>.rest".
	scheme, suffix string
}

// parseOrigin checks an origin as a browser serializes it: scheme "://" host
// [":" port], nothing else; "*." as the host's first label makes it a
// wildcard subdomain pattern.
func parseOrigin(s string) (origin, error) {
	if s == "null" {
		return origin{exact: s}, nil
	}
	lower := strings.ToLower(s)
	scheme, rest, ok := strings.Cut(lower, "://")
	if !ok || !validScheme(scheme) {
		return origin{}, fmt.Errorf("%q is not an origin: want scheme://host[:port], e.g. \"https://app.example.com\"", s)
	}
	if i := strings.IndexAny(rest, "/?#@ \t"); i >= 0 {
		hint := ""
		if rest[i] == '/' {
			hint = " (an origin has no path, not even a trailing \"/\")"
		}
		return origin{}, fmt.Errorf("%q is not an origin%s", s, hint)
	}
	host, port := rest, ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.HasSuffix(rest, "]") {
		host, port = rest[:i], rest[i+1:]
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return origin{}, fmt.Errorf("%q: invalid port %q", s, port)
		}
	}
	wild := false
	if h, ok := strings.CutPrefix(host, "*."); ok {
		wild, host = true, h
	}
	if !validHost(host) {
		return origin{}, fmt.Errorf("%q: invalid host %q (a wildcard is allowed only as the first label: \"https://*.example.com\")", s, host)
	}
	if wild {
		sfx := "." + host
		if port != "" {
			sfx += ":" + port
		}
		return origin{scheme: scheme + "://", suffix: sfx}, nil
	}
	return origin{exact: lower}, nil
}

func validScheme(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// validHost accepts DNS names, IPv4 and bracketed IPv6 literals.
func validHost(h string) bool {
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") || len(h) < 4 {
			return false
		}
		for _, c := range h[1 : len(h)-1] {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == ':' || c == '.') {
				return false
			}
		}
		return true
	}
	return validLabels(h)
}

// validLabels: dot-separated non-empty labels of [a-z0-9-_] (as lower case),
// at most 63 bytes each. No allocation: it runs per request for wildcards.
func validLabels(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	n := 0 // length of the current label
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c == '.':
			if n == 0 {
				return false
			}
			n = 0
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_':
			n++
			if n > 63 {
				return false
			}
		default:
			return false
		}
	}
	return n > 0
}
