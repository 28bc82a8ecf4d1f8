package headermutation

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/expr"
	"github.com/moeproxy/moe/shared/variables"
)

// compiled is what Init builds: the mutation lists with lower-case names
// and the metrics.
type compiled struct {
	req, resp []op

	reqApplied, respApplied api.Counter
	sanitized, condErrors   api.Counter
}

// op is a compiled Mutation.
type op struct {
	kind      byte // 's'et, 'a'dd, 'p'pend, 'r'emove
	name      string
	value     *variables.Template
	keepEmpty bool
	when      *expr.Bool
}

// Init runs once per config version, after Validate.
func (c *Config) Init(env api.ConfigEnv) error {
	c.req = compileList(c.Request)
	c.resp = compileList(c.Response)
	m := env.Metrics()
	c.reqApplied = m.Counter("request_mutations")
	c.respApplied = m.Counter("response_mutations")
	c.sanitized = m.Counter("sanitized_values")
	c.condErrors = m.Counter("condition_errors")
	return nil
}

func compileList(list []Mutation) []op {
	out := make([]op, len(list))
	for i, m := range list {
		o := op{name: strings.ToLower(m.Name), value: m.Value, keepEmpty: m.KeepEmpty, when: m.When}
		switch m.Op {
		case opSet:
			o.kind = 's'
		case opAdd:
			o.kind = 'a'
		case opAppend:
			o.kind = 'p'
		default:
			o.kind = 'r'
		}
		out[i] = o
	}
	return out
}
