package consumerrestriction

import (
	"github.com/moeproxy/moe/shared/api"
)

// Config of the consumer-restriction plugin. See README.md for the reference
// and the matching semantics.
type Config struct {
	// Rules are evaluated as a set: a deny rule that matches wins, then an allow
	// rule that matches, then DefaultAction.
	Rules []Rule `json:"rules"`
	// DefaultAction applies when no rule matches: "allow" or "deny". Empty
	// (default) means "deny" if any allow rule exists, else "allow" (an allow
	// list denies the rest; a deny list lets the rest through).
	DefaultAction string `json:"default_action"`
	// Status/Message answer a denied consumer.
	Status  int    `json:"status"`
	Message string `json:"message"`
	// UnauthenticatedStatus/UnauthenticatedMessage answer a request without a
	// consumer, or an anonymous consumer that is denied: credentials could help.
	UnauthenticatedStatus  int    `json:"unauthenticated_status"`
	UnauthenticatedMessage string `json:"unauthenticated_message"`

	compiled // built by Validate and Init (compiled.go)
}

// Rule is one RBAC rule. A request matches it when the consumer matches
// (its name is in Consumers, or its group in Groups, or Consumers holds "*")
// AND the method matches (Methods empty = any) AND the path matches (Paths
// empty = any).
type Rule struct {
	// Action is "allow" (default) or "deny".
	Action    string   `json:"action"`
	Consumers []string `json:"consumers"`
	Groups    []string `json:"groups"`
	Methods   []string `json:"methods"`
	// Paths: "/exact", "/prefix/*" (the prefix itself, e.g. /prefix, and
	// everything under /prefix/), "/pre*" (any path starting with /pre) or "*".
	// Matched against the path without query, percent-decoded and with dot
	// segments and repeated slashes resolved.
	Paths []string `json:"paths"`
}

const (
	actionAllow = "allow"
	actionDeny  = "deny"
)

// Denial reasons (counters denied_<reason>).
const (
	reasonNoConsumer = "no_consumer" // no consumer set by an earlier auth plugin
	reasonRule       = "rule"        // a deny rule matched
	reasonDefault    = "default"     // no rule matched and default_action is deny
	reasonBadPath    = "bad_path"    // the path cannot be decoded (400)
)

func newConfig() any {
	return &Config{
		Status:                 403,
		Message:                "Consumer is not allowed",
		UnauthenticatedStatus:  401,
		UnauthenticatedMessage: "Authentication required",
	}
}

// Validate checks values and compiles the rules (errors name rules[i].field):
// compiling is the check, and offline validation (moectl) runs Validate, not
// Init.
func (c *Config) Validate() error {
	if len(c.Rules) == 0 {
		return api.FieldErrorf("rules", "at least one rule is required")
	}
	c.rules = make([]rule, 0, len(c.Rules))
	anyAllow := false
	for i := range c.Rules {
		r, err := compileRule(&c.Rules[i], api.Field("rules", i))
		if err != nil {
			return err
		}
		anyAllow = anyAllow || !r.deny
		c.rules = append(c.rules, r)
	}
	switch c.DefaultAction {
	case "":
		c.defaultAllow = !anyAllow
	default:
		if err := api.CheckOneOf("default_action", c.DefaultAction, actionAllow, actionDeny); err != nil {
			return err
		}
		c.defaultAllow = c.DefaultAction == actionAllow
	}
	if err := api.CheckStatus("status", c.Status); err != nil {
		return err
	}
	return api.CheckStatus("unauthenticated_status", c.UnauthenticatedStatus)
}
