package cel

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/expr"
	"github.com/moeproxy/moe/shared/variables"
)

// Config of the cel plugin. See README.md for the reference.
type Config struct {
	// Phase is "after_route" (default: xds.* attributes are the route's) or
	// "before_route" (request rules run before routing, so headers they set
	// choose the route).
	Phase string `json:"phase"`
	// Rules run in order at their point; a deny ends the point.
	Rules []Rule `json:"rules"`

	compiled
}

// Rule is one condition and its actions.
type Rule struct {
	// Name labels the rule in logs and its metric (moe_cel_<name>_matched);
	// default "rules[<i>]" (no metric of its own).
	Name string `json:"name"`
	// At is the point: "request" (default), "response" or "log".
	At string `json:"at"`
	// When is a CEL condition; unset = always.
	When *expr.Bool `json:"when"`
	// OnError: when When fails to evaluate (a missing map key, the cost
	// limit): "skip" (default: the rule does not apply) or "match" (it
	// applies: fail closed for a deny rule).
	OnError string `json:"on_error"`
	// SetVars sets variables $cel_<name> for the rest of the request.
	SetVars []Value `json:"set_vars"`
	// Mark adds a label to the request's marks ($cel_marks).
	Mark string `json:"mark"`
	// SetHeaders sets request headers (at "request") or response headers (at
	// "response").
	SetHeaders []Value `json:"set_headers"`
	// RemoveHeaders removes headers, like SetHeaders.
	RemoveHeaders []string `json:"remove_headers"`
	// Log writes an info line with the value of this CEL string expression.
	Log *expr.String `json:"log"`
	// Deny answers the request (or replaces the response) after the other
	// actions ran.
	Deny *Deny `json:"deny"`
}

// Value is a name and its value: a variable template (a literal or
// "$consumer") in Value, or a CEL string expression in Expr.
type Value struct {
	Name  string              `json:"name"`
	Value *variables.Template `json:"value"`
	Expr  *expr.String        `json:"expr"`
}

// Deny is the local reply of a denying rule.
type Deny struct {
	Status  int               `json:"status"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
}

const (
	atRequest  = "request"
	atResponse = "response"
	atLog      = "log"

	onErrorSkip  = "skip"
	onErrorMatch = "match"

	maxRules = 1000
	maxName  = 64
)

func newConfig() any { return &Config{Phase: "after_route"} }

// Validate checks every rule; CEL expressions and templates were compiled
// (and type-checked) while decoding, with their positions in the error.
func (c *Config) Validate() error {
	if err := api.CheckOneOf("phase", c.Phase, "after_route", "before_route"); err != nil {
		return err
	}
	if len(c.Rules) == 0 {
		return api.FieldErrorf("rules", "is required: at least one rule")
	}
	if len(c.Rules) > maxRules {
		return api.FieldErrorf("rules", "at most %d rules, got %d", maxRules, len(c.Rules))
	}
	names := map[string]int{}
	for i := range c.Rules {
		r := &c.Rules[i]
		f := func(parts ...any) string { return api.Field(append([]any{"rules", i}, parts...)...) }
		if r.Name != "" {
			if !validName(r.Name) {
				return api.FieldErrorf(f("name"), "%q: use 1 to %d of a-z, 0-9, '_' and '-', starting with a letter", r.Name, maxName)
			}
			if j, dup := names[r.Name]; dup {
				return api.FieldErrorf(f("name"), "%q is also the name of rules[%d]", r.Name, j)
			}
			names[r.Name] = i
		}
		if r.At != "" {
			if err := api.CheckOneOf(f("at"), r.At, atRequest, atResponse, atLog); err != nil {
				return err
			}
		}
		if r.OnError != "" {
			if err := api.CheckOneOf(f("on_error"), r.OnError, onErrorSkip, onErrorMatch); err != nil {
				return err
			}
		}
		if len(r.SetVars) == 0 && r.Mark == "" && len(r.SetHeaders) == 0 && len(r.RemoveHeaders) == 0 && r.Log == nil && r.Deny == nil {
			return api.FieldErrorf(api.Field("rules", i), "has no action: set deny, set_headers, remove_headers, set_vars, mark or log")
		}
		if r.At == atLog {
			switch {
			case r.Deny != nil:
				return api.FieldErrorf(f("deny"), "a rule at the log point cannot deny: the response was sent")
			case len(r.SetHeaders) > 0:
				return api.FieldErrorf(f("set_headers"), "a rule at the log point cannot change headers: the response was sent")
			case len(r.RemoveHeaders) > 0:
				return api.FieldErrorf(f("remove_headers"), "a rule at the log point cannot change headers: the response was sent")
			}
		}
		for j, v := range r.SetVars {
			if !validName(v.Name) || strings.Contains(v.Name, "-") {
				return api.FieldErrorf(f("set_vars", j, "name"), "%q: use 1 to %d of a-z, 0-9 and '_', starting with a letter (the variable is $cel_<name>)", v.Name, maxName)
			}
			if v.Name == "marks" {
				return api.FieldErrorf(f("set_vars", j, "name"), "\"marks\" is reserved ($cel_marks holds the request's marks)")
			}
			if err := v.check(f("set_vars", j)); err != nil {
				return err
			}
		}
		if r.Mark != "" && (len(r.Mark) > maxName || !validMark(r.Mark)) {
			return api.FieldErrorf(f("mark"), "%q: use 1 to %d of a-z, A-Z, 0-9, '_', '-' and '.'", r.Mark, maxName)
		}
		for j, v := range r.SetHeaders {
			if err := api.CheckHeaderName(f("set_headers", j, "name"), v.Name); err != nil {
				return err
			}
			if err := v.check(f("set_headers", j)); err != nil {
				return err
			}
		}
		for j, h := range r.RemoveHeaders {
			if err := api.CheckHeaderName(f("remove_headers", j), h); err != nil {
				return err
			}
		}
		if d := r.Deny; d != nil {
			if d.Status != 0 { // 0: the default, 403
				if err := api.CheckStatus(f("deny", "status"), d.Status); err != nil {
					return err
				}
			}
			if strings.ContainsRune(d.Body, 0) {
				return api.FieldErrorf(f("deny", "body"), "must not contain NUL bytes")
			}
			for k, v := range d.Headers {
				if err := api.CheckHeaderName(f("deny", "headers", k), k); err != nil {
					return err
				}
				if strings.ContainsAny(v, "\r\n\x00") {
					return api.FieldErrorf(f("deny", "headers", k), "the value must not contain CR, LF or NUL")
				}
			}
		}
	}
	return nil
}

// check: exactly one of value and expr.
func (v *Value) check(field string) error {
	if (v.Value == nil) == (v.Expr == nil) {
		return api.FieldErrorf(field, "set exactly one of value (a template such as \"gold\" or \"$consumer\") and expr (a CEL string expression)")
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > maxName || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validMark(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return s != ""
}

// Needs: the configured phase; nothing blocks.
func (c *Config) Needs() api.Needs {
	if c.Phase == "before_route" {
		return api.Needs{Phase: api.BeforeRoute}
	}
	return api.Needs{Phase: api.AfterRoute}
}
