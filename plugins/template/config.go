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
	if c.RequireHeader != "" {
		if err := api.CheckHeaderName("require_header", c.RequireHeader); err != nil {
			return err
		}
	}
	if err := api.CheckStatus("status", c.Status); err != nil {
		return err
	}
	if strings.ContainsRune(c.Body, 0) {
		return api.FieldErrorf("body", "must not contain NUL bytes")
	}
	return api.CheckHeaderName("stamp_header", c.StampHeader)
}
