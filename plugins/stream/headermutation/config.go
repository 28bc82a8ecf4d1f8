package headermutation

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/expr"
	"github.com/moeproxy/moe/shared/variables"
)

// Config of the header-mutation plugin. See README.md for the reference.
type Config struct {
	// Phase is when the request mutations run: "after_route" (default: the
	// route is known, $route_name works) or "before_route" (the route is
	// matched again on the mutated headers).
	Phase string `json:"phase"`
	// Request mutations, applied in order to the request headers.
	Request []Mutation `json:"request"`
	// Response mutations, applied in order to the response headers (local
	// replies included).
	Response []Mutation `json:"response"`

	compiled
}

// Mutation is one change to one header.
type Mutation struct {
	// Op is set (replace every value, or add), add (only when the header is
	// absent), append (one more value) or remove.
	Op string `json:"op"`
	// Name of the header.
	Name string `json:"name"`
	// Value is a template of variables ("$consumer", "$route_name:$arg_x");
	// required except for remove.
	Value *variables.Template `json:"value"`
	// KeepEmpty applies the mutation when the value renders empty (default:
	// skipped, as Envoy's keep_empty_value: false).
	KeepEmpty bool `json:"keep_empty"`
	// When is a CEL condition; the mutation applies only when it is true.
	When *expr.Bool `json:"when"`
}

const (
	opSet    = "set"
	opAdd    = "add"
	opAppend = "append"
	opRemove = "remove"

	phaseAfter  = "after_route"
	phaseBefore = "before_route"

	maxMutations = 1000
)

func newConfig() any { return &Config{Phase: phaseAfter} }

// managed are headers the proxy itself owns: framing and connection
// management (changing them could desynchronise the message) and the host,
// which routing plugins rewrite.
var managed = map[string]string{
	"content-length":    "framing is the proxy's",
	"transfer-encoding": "framing is the proxy's",
	"connection":        "connection management is the proxy's",
	"keep-alive":        "connection management is the proxy's",
	"proxy-connection":  "connection management is the proxy's",
	"upgrade":           "connection management is the proxy's",
	"te":                "connection management is the proxy's",
	"host":              "it is the :authority; rewrite it with a route's host_rewrite or a routing plugin",
}

// Validate checks the values; errors name the field. Templates and CEL
// were compiled while decoding.
func (c *Config) Validate() error {
	if err := api.CheckOneOf("phase", c.Phase, phaseAfter, phaseBefore); err != nil {
		return err
	}
	if len(c.Request) == 0 && len(c.Response) == 0 {
		return api.FieldErrorf("request", "give request or response mutations")
	}
	if err := checkList("request", c.Request); err != nil {
		return err
	}
	return checkList("response", c.Response)
}

func checkList(field string, list []Mutation) error {
	if len(list) > maxMutations {
		return api.FieldErrorf(field, "at most %d mutations, got %d", maxMutations, len(list))
	}
	for i, m := range list {
		at := api.Field(field, i)
		if err := api.CheckOneOf(at+".op", m.Op, opSet, opAdd, opAppend, opRemove); err != nil {
			return err
		}
		if err := api.CheckHeaderName(at+".name", m.Name); err != nil {
			return err
		}
		if why, ok := managed[strings.ToLower(m.Name)]; ok {
			return api.FieldErrorf(at+".name", "%s cannot be changed: %s", m.Name, why)
		}
		switch {
		case m.Op == opRemove && m.Value != nil:
			return api.FieldErrorf(at+".value", "remove takes no value")
		case m.Op == opRemove && m.KeepEmpty:
			return api.FieldErrorf(at+".keep_empty", "remove takes no value")
		case m.Op != opRemove && m.Value == nil:
			return api.FieldErrorf(at+".value", "is required for %s (a template such as \"$consumer\"; \"\" with keep_empty for an empty value)", m.Op)
		}
	}
	return nil
}

// Needs: the configured phase; nothing blocks (templates and CEL are CPU
// work on Envoy's worker thread).
func (c *Config) Needs() api.Needs {
	if c.Phase == phaseBefore {
		return api.Needs{Phase: api.BeforeRoute}
	}
	return api.Needs{Phase: api.AfterRoute}
}
