package consumerrestriction

import (
	"fmt"
	"strings"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
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

	rules        []rule
	defaultAllow bool
	denied       *authn.Reply
	unauth       *authn.Reply
	badPath      *authn.Reply
	stats        *authn.Stats
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

// Validate checks values and compiles the rules (errors name rules[i].field).
func (c *Config) Validate() error {
	if len(c.Rules) == 0 {
		return api.FieldErrorf("rules", "at least one rule is required")
	}
	c.rules = make([]rule, 0, len(c.Rules))
	anyAllow := false
	for i := range c.Rules {
		r, err := compileRule(&c.Rules[i], fmt.Sprintf("rules[%d]", i))
		if err != nil {
			return err
		}
		anyAllow = anyAllow || !r.deny
		c.rules = append(c.rules, r)
	}
	switch c.DefaultAction {
	case "":
		c.defaultAllow = !anyAllow
	case actionAllow:
		c.defaultAllow = true
	case actionDeny:
		c.defaultAllow = false
	default:
		return api.FieldErrorf("default_action", "must be %q or %q, got %q", actionAllow, actionDeny, c.DefaultAction)
	}
	if c.Status < 400 || c.Status > 599 {
		return api.FieldErrorf("status", "must be a 4xx or 5xx code, got %d", c.Status)
	}
	if c.UnauthenticatedStatus < 400 || c.UnauthenticatedStatus > 599 {
		return api.FieldErrorf("unauthenticated_status", "must be a 4xx or 5xx code, got %d", c.UnauthenticatedStatus)
	}
	return nil
}

// Init builds the replies and counters once per config version.
func (c *Config) Init(env api.ConfigEnv) error {
	c.denied = authn.NewReply(c.Status, "", c.Message)
	c.unauth = authn.NewReply(c.UnauthenticatedStatus, "", c.UnauthenticatedMessage)
	c.badPath = authn.NewReply(400, "", "Bad request path")
	c.stats = authn.NewStats(env.Metrics(), reasonNoConsumer, reasonRule, reasonDefault, reasonBadPath)
	return nil
}

func compileRule(r *Rule, field string) (rule, error) {
	out := rule{}
	switch r.Action {
	case "", actionAllow:
	case actionDeny:
		out.deny = true
	default:
		return out, api.FieldErrorf(field+".action", "must be %q or %q, got %q", actionAllow, actionDeny, r.Action)
	}
	if len(r.Consumers) == 0 && len(r.Groups) == 0 {
		return out, api.FieldErrorf(field, `needs consumers or groups (use consumers: ["*"] for any authenticated consumer)`)
	}
	for i, n := range r.Consumers {
		switch {
		case n == "*":
			out.anyConsumer = true
		case n == "" || strings.ContainsFunc(n, isCtl):
			return out, api.FieldErrorf(fmt.Sprintf("%s.consumers[%d]", field, i), "empty or contains control characters")
		default:
			if out.consumers == nil {
				out.consumers = map[string]struct{}{}
			}
			out.consumers[n] = struct{}{}
		}
	}
	for i, g := range r.Groups {
		if g == "" || strings.ContainsFunc(g, isCtl) {
			return out, api.FieldErrorf(fmt.Sprintf("%s.groups[%d]", field, i), "empty or contains control characters")
		}
		if out.groups == nil {
			out.groups = map[string]struct{}{}
		}
		out.groups[g] = struct{}{}
	}
	for i, m := range r.Methods {
		if m == "" || strings.ContainsFunc(m, func(c rune) bool { return !isTokenChar(c) }) {
			return out, api.FieldErrorf(fmt.Sprintf("%s.methods[%d]", field, i), "%q is not an HTTP method token", m)
		}
		if m == "*" {
			out.methods = nil
			break
		}
		out.methods = append(out.methods, strings.ToUpper(m))
	}
	for i, p := range r.Paths {
		pm, err := compilePath(p)
		if err != nil {
			return out, api.FieldErrorf(fmt.Sprintf("%s.paths[%d]", field, i), "%v", err)
		}
		if pm.any {
			out.paths = nil
			break
		}
		out.paths = append(out.paths, pm)
	}
	return out, nil
}

func isCtl(c rune) bool { return c < 0x20 || c == 0x7f }

// isTokenChar: RFC 9110 tchar.
func isTokenChar(c rune) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}
