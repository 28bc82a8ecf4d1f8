package directresponse

import (
	"maps"
	"slices"
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
)

// Config of the direct-response plugin. See README.md for the reference.
type Config struct {
	// Rules are tried in order; the first whose match holds answers the
	// request. A request no rule matches goes on.
	Rules []Rule `json:"rules"`

	compiled
}

// Rule is one answer and the requests it is for.
type Rule struct {
	// Name identifies the rule in logs and decisions (optional).
	Name string `json:"name"`
	// Match selects the requests (unset = every request).
	Match *match.Match `json:"match"`
	// Status of the answer (default 200).
	Status int `json:"status"`
	// Headers of the answer.
	Headers map[string]string `json:"headers"`
	// Body of the answer, inline.
	Body string `json:"body"`
	// BodyFile is a file whose content is the body, read when the config
	// loads (not per request). Relative paths are relative to Envoy's
	// working directory.
	BodyFile string `json:"body_file"`
}

const (
	maxRules = 1000
	// maxBody bounds a body (inline or file): it is copied to Envoy for
	// every answer. Envoy's own direct_response allows 4 KiB by default.
	maxBody = 1 << 20
)

func newConfig() any { return &Config{} }

// Validate checks the values; errors name the field. Matches were compiled
// while decoding; body files are read by Init.
func (c *Config) Validate() error {
	if len(c.Rules) == 0 {
		return api.FieldErrorf("rules", "give at least one rule")
	}
	if len(c.Rules) > maxRules {
		return api.FieldErrorf("rules", "at most %d rules, got %d", maxRules, len(c.Rules))
	}
	names := map[string]bool{}
	for i, r := range c.Rules {
		at := api.Field("rules", i)
		if r.Name != "" {
			if names[r.Name] {
				return api.FieldErrorf(at+".name", "%q is used by an earlier rule", r.Name)
			}
			names[r.Name] = true
		}
		if r.Status != 0 && (r.Status < 200 || r.Status > 599) {
			return api.FieldErrorf(at+".status", "must be an HTTP status between 200 and 599, got %d", r.Status)
		}
		if r.Body != "" && r.BodyFile != "" {
			return api.FieldErrorf(at+".body_file", "give body or body_file, not both")
		}
		if len(r.Body) > maxBody {
			return api.FieldErrorf(at+".body", "at most %d bytes, got %d", maxBody, len(r.Body))
		}
		if (r.Status == 204 || r.Status == 304) && (r.Body != "" || r.BodyFile != "") {
			return api.FieldErrorf(at+".body", "a %d answer has no body", r.Status)
		}
		for _, name := range slices.Sorted(maps.Keys(r.Headers)) { // the same error every time
			v := r.Headers[name]
			field := at + ".headers." + name
			if err := api.CheckHeaderName(field, name); err != nil {
				return err
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				return api.FieldErrorf(field, "a header value must not contain CR, LF or NUL")
			}
			switch strings.ToLower(name) {
			case "content-length", "transfer-encoding", "connection":
				return api.FieldErrorf(field, "is set by the proxy, not by a reply's config")
			}
		}
	}
	return nil
}
