package cel

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/expr"
	"github.com/moeproxy/moe/shared/variables"
)

// statePrefix: a rule's variable <name> is the request state "cel.<name>"
// (a string: later golang filters and Envoy's access log read it as
// moe.state.cel.<name>); the marks are "cel.marks".
const (
	statePrefix = "cel."
	stateMarks  = statePrefix + "marks"
)

// compiled is what Init builds once per config version.
type compiled struct {
	request, response, log []*rule
	// filter implements exactly the hooks of the points that have rules.
	filter api.Filter

	matched, denied, errors api.Counter
}

// rule is a Rule ready to run.
type rule struct {
	name         string
	when         *expr.Bool
	matchOnError bool
	vars         []value // name = state key
	mark         string
	markReason   string // the decision recorded for the mark
	headers      []value
	remove       []string
	log          *expr.String
	deny         *reply
	matched      api.Counter // nil for a rule without a name
}

type value struct {
	name string
	tpl  *variables.Template
	ex   *expr.String
}

type reply struct {
	status  int
	body    string
	headers api.Headers
}

// Init groups the rules by point and picks the filter type.
func (c *Config) Init(env api.ConfigEnv) error {
	m := env.Metrics()
	c.matched = m.Counter("matched")
	c.denied = m.Counter("denied")
	c.errors = m.Counter("errors")
	for i := range c.Rules {
		r := &c.Rules[i]
		cr := &rule{name: r.Name, when: r.When, matchOnError: r.OnError == onErrorMatch, mark: r.Mark, log: r.Log}
		if cr.name == "" {
			cr.name = api.Field("rules", i)
		} else {
			cr.matched = m.Counter(r.Name + "_matched")
		}
		for _, v := range r.SetVars {
			cr.vars = append(cr.vars, value{name: statePrefix + v.Name, tpl: v.Value, ex: v.Expr})
		}
		if r.Mark != "" {
			cr.markReason = "mark " + r.Mark
		}
		for _, v := range r.SetHeaders {
			cr.headers = append(cr.headers, value{name: strings.ToLower(v.Name), tpl: v.Value, ex: v.Expr})
		}
		for _, h := range r.RemoveHeaders {
			cr.remove = append(cr.remove, strings.ToLower(h))
		}
		if d := r.Deny; d != nil {
			rp := &reply{status: d.Status, body: d.Body, headers: api.Headers{}}
			if rp.status == 0 {
				rp.status = 403
			}
			if rp.body == "" {
				rp.body = "Forbidden\n"
			}
			for k, v := range d.Headers {
				rp.headers[strings.ToLower(k)] = []string{v}
			}
			if _, ok := rp.headers["content-type"]; !ok {
				rp.headers["content-type"] = []string{"text/plain; charset=utf-8"}
			}
			cr.deny = rp
		}
		switch r.At {
		case atResponse:
			c.response = append(c.response, cr)
		case atLog:
			c.log = append(c.log, cr)
		default:
			c.request = append(c.request, cr)
		}
	}
	c.filter = c.newFilter()
	return nil
}
