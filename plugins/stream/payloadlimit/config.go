package payloadlimit

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// Config of the payload-limit plugin. See README.md for the reference.
type Config struct {
	// MaxRequestBody is the largest request body let through (0 = no request
	// limit). A request declaring a larger Content-Length is refused before
	// any body is read; a chunked one when the running count passes it.
	MaxRequestBody Size `json:"max_request_body"`
	// Status refuses a request body over the limit (default 413).
	Status int `json:"status"`
	// Body of that refusal (default "Payload Too Large", Envoy's text).
	Body string `json:"body"`
	// MaxResponseBody is the largest response body let through (0 = no
	// response limit).
	MaxResponseBody Size `json:"max_response_body"`
	// ResponseStatus replaces a response whose Content-Length is over the
	// limit (default 500, what Envoy answers when a response overflows its
	// buffer limit).
	ResponseStatus int `json:"response_status"`
	// ResponseBody of that replacement (default "Internal Server Error").
	ResponseBody string `json:"response_body"`

	compiled
}

func newConfig() any {
	return &Config{
		Status:         413,
		Body:           "Payload Too Large",
		ResponseStatus: 500,
		ResponseBody:   "Internal Server Error",
	}
}

// Validate checks the values; errors name the field. Sizes were checked
// (0 .. 2^53 bytes) while decoding.
func (c *Config) Validate() error {
	if c.MaxRequestBody == 0 && c.MaxResponseBody == 0 {
		return api.FieldErrorf("max_request_body", "set max_request_body or max_response_body (a size such as \"10m\"); to turn the plugin off on a route, disable it there")
	}
	if c.MaxRequestBody < 0 {
		return api.FieldErrorf("max_request_body", "must not be negative")
	}
	if c.MaxResponseBody < 0 {
		return api.FieldErrorf("max_response_body", "must not be negative")
	}
	if err := api.CheckStatus("status", c.Status); err != nil {
		return err
	}
	if err := api.CheckStatus("response_status", c.ResponseStatus); err != nil {
		return err
	}
	if strings.ContainsRune(c.Body, 0) {
		return api.FieldErrorf("body", "must not contain NUL bytes")
	}
	if strings.ContainsRune(c.ResponseBody, 0) {
		return api.FieldErrorf("response_body", "must not contain NUL bytes")
	}
	return nil
}

// Needs: a streaming body only in the directions that have a limit, so a
// request-only config leaves the response alone (and vice versa). Nothing
// blocks: counting runs on Envoy's worker thread.
func (c *Config) Needs() api.Needs {
	n := api.Needs{Phase: api.AfterRoute}
	if c.MaxRequestBody > 0 {
		n.RequestBody = api.StreamingBody
	}
	if c.MaxResponseBody > 0 {
		n.ResponseBody = api.StreamingBody
	}
	return n
}
