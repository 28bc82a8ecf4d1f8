package template

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// Config is the template plugin's config. Every field has a json tag and a
// doc comment; the README's configuration table lists the same fields (a test
// checks it).
type Config struct {
	// RequireHeader is a request header that must be present ("" = no check).
	RequireHeader string `json:"require_header"`
	// Status answers a request without RequireHeader (default 400).
	Status int `json:"status"`
	// Body of that answer (default "missing <require_header>").
	Body string `json:"body"`
	// StampHeader is the response header set to Stamp (default
	// "x-moe-template").
	StampHeader string `json:"stamp_header"`
	// Stamp is a variable template rendered per request, e.g.
	// "$route_name:$consumer" (unset = no response header). Templates are
	// compiled while the config is decoded: an unknown variable is a config
	// error naming this field.
	Stamp *variables.Template `json:"stamp"`

	compiled
}

// newConfig returns a config holding the defaults; the framework decodes the
// user's config over it.
func newConfig() any {
	return &Config{Status: 400, StampHeader: "x-moe-template"}
}

// Validate checks what needs no I/O and names the field of each problem.
func (c *Config) Validate() error {
	if c.RequireHeader != "" && !validHeaderName(c.RequireHeader) {
		return api.FieldErrorf("require_header", "%q is not a valid header name", c.RequireHeader)
	}
	if err := api.CheckStatus("status", c.Status); err != nil {
		return err
	}
	if strings.ContainsRune(c.Body, 0) {
		return api.FieldErrorf("body", "must not contain NUL bytes")
	}
	if !validHeaderName(c.StampHeader) {
		return api.FieldErrorf("stamp_header", "%q is not a valid header name", c.StampHeader)
	}
	return nil
}

// validHeaderName accepts an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
