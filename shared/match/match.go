// Package match is moe's one request matcher, used by every plugin that acts
// on "requests like these" (routing rules, fault injection, direct
// responses, mirroring, ...). A Match is compiled while the config is
// decoded (regexes, variables and CEL checked then, errors naming the field)
// and costs only compares per request.
//
//	match:
//	  path: {prefix: /api/}
//	  methods: [GET, HEAD]
//	  headers: [{name: x-canary, exact: "1"}, {name: x-debug, present: false}]
//	  query: [{name: tenant, regex: "^t-[0-9]+$"}]
//	  cookies: [{name: beta, exact: "yes"}]
//	  vars: [{name: $consumer, prefix: partner-}]
//	  cel: 'source.ip.startsWith("10.")'
//
// Every part that is set must hold (AND); an empty match matches every
// request. Use several rules for OR. See README.md for the full reference.
package match

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/expr"
	"github.com/moeproxy/moe/shared/variables"
)

// Match is a compiled request condition.
type Match struct {
	spec    spec
	path    *stringMatcher
	methods []string
	headers []valueMatcher
	query   []valueMatcher
	cookies []valueMatcher
	vars    []varMatcher
	cel     *expr.Bool
}

// spec is the config form.
type spec struct {
	// Path matches the request path without the query (as Envoy's route match).
	Path *StringMatch `json:"path"`
	// Methods: one of them (case-sensitive, as HTTP methods are).
	Methods []string `json:"methods"`
	// Headers, Query, Cookies: every listed one must match.
	Headers []ValueMatch `json:"headers"`
	Query   []ValueMatch `json:"query"`
	Cookies []ValueMatch `json:"cookies"`
	// Vars match moe variables by name ("$consumer", "$route_name", a
	// plugin's own).
	Vars []ValueMatch `json:"vars"`
	// CEL is a condition over the request attributes (shared/expr).
	CEL *expr.Bool `json:"cel"`
}

// StringMatch is one way to match a string; exactly one of exact, prefix,
// suffix, contains or regex (RE2, matched anywhere unless anchored).
type StringMatch struct {
	Exact      *string `json:"exact"`
	Prefix     string  `json:"prefix"`
	Suffix     string  `json:"suffix"`
	Contains   string  `json:"contains"`
	Regex      string  `json:"regex"`
	IgnoreCase bool    `json:"ignore_case"`
}

// ValueMatch matches a named value (header, query parameter, cookie,
// variable): a StringMatch on it, or only whether it is there (present:
// true/false). With neither, the value must be present. Invert negates the
// result (an absent value then matches).
type ValueMatch struct {
	Name string `json:"name"`
	StringMatch
	Present *bool `json:"present"`
	Invert  bool  `json:"invert"`
}

// UnmarshalJSON decodes strictly and compiles; errors name the field inside
// the match ("headers[1].regex: ...").
func (m *Match) UnmarshalJSON(data []byte) error {
	var s spec
	if err := config.DecodeStrict(data, &s); err != nil {
		return err
	}
	c, err := compile(s)
	if err != nil {
		return err
	}
	*m = *c
	return nil
}

// MarshalJSON writes the config form back.
func (m Match) MarshalJSON() ([]byte, error) { return json.Marshal(m.spec) }

// ConfigType names the type in generated docs and schemas.
func (*Match) ConfigType() string { return "match" }

// Compile compiles a match from its JSON form (for code that builds one).
func Compile(js string) (*Match, error) {
	var m Match
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		return nil, err
	}
	return &m, nil
}

func compile(s spec) (*Match, error) {
	m := &Match{spec: s, cel: s.CEL}
	if s.Path != nil {
		sm, err := s.Path.compile()
		if err != nil {
			return nil, api.FieldErrorf("path", "%v", err)
		}
		m.path = sm
	}
	for i, meth := range s.Methods {
		if meth == "" || strings.ToUpper(meth) != meth || strings.ContainsAny(meth, " \t\r\n") {
			return nil, api.FieldErrorf(fmt.Sprintf("methods[%d]", i), "%q is not an upper-case method name", meth)
		}
		m.methods = append(m.methods, meth)
	}
	var err error
	if m.headers, err = compileValues("headers", s.Headers, true); err != nil {
		return nil, err
	}
	if m.query, err = compileValues("query", s.Query, false); err != nil {
		return nil, err
	}
	if m.cookies, err = compileValues("cookies", s.Cookies, false); err != nil {
		return nil, err
	}
	vs, err := compileValues("vars", s.Vars, false)
	if err != nil {
		return nil, err
	}
	for i, v := range vs {
		compiled, err := variables.Compile(v.name)
		if err != nil {
			return nil, api.FieldErrorf(fmt.Sprintf("vars[%d].name", i), "%v", err)
		}
		m.vars = append(m.vars, varMatcher{valueMatcher: v, v: compiled})
	}
	return m, nil
}

func compileValues(field string, list []ValueMatch, header bool) ([]valueMatcher, error) {
	out := make([]valueMatcher, 0, len(list))
	for i, v := range list {
		at := fmt.Sprintf("%s[%d]", field, i)
		if v.Name == "" {
			return nil, api.FieldErrorf(at+".name", "is required")
		}
		vm := valueMatcher{name: v.Name, present: v.Present, invert: v.Invert}
		if header {
			vm.name = strings.ToLower(v.Name)
		}
		if v.StringMatch.set() {
			if v.Present != nil {
				return nil, api.FieldErrorf(at+".present", "give either present or a string match, not both")
			}
			sm, err := v.StringMatch.compile()
			if err != nil {
				return nil, api.FieldErrorf(at, "%v", err)
			}
			vm.match = sm
		}
		out = append(out, vm)
	}
	return out, nil
}

// Matches reports whether the request matches. h is the request headers the
// plugin got; ctx serves variables and CEL. A CEL evaluation error counts as
// no match.
func (m *Match) Matches(ctx api.Context, h api.RequestHeaderMap) bool {
	if m == nil {
		return true
	}
	if len(m.methods) > 0 && !contains(m.methods, h.Method()) {
		return false
	}
	if m.path != nil && !m.path.matches(urlPath(h.Path())) {
		return false
	}
	for i := range m.headers {
		vm := &m.headers[i]
		vs := h.Values(vm.name)
		if !vm.result(len(vs) > 0, func() bool { return anyMatches(vm.match, vs) }) {
			return false
		}
	}
	for i := range m.query {
		vm := &m.query[i]
		v, ok := variables.QueryArg(h.Path(), vm.name)
		if !vm.result(ok, func() bool { return vm.match.matches(v) }) {
			return false
		}
	}
	for i := range m.cookies {
		vm := &m.cookies[i]
		var v string
		ok := false
		if _, has := h.Get("cookie"); has {
			v, ok = variables.Cookie(h.Values("cookie"), vm.name)
		}
		if !vm.result(ok, func() bool { return vm.match.matches(v) }) {
			return false
		}
	}
	for i := range m.vars {
		vm := &m.vars[i]
		v, ok := vm.v.Get(ctx)
		if !vm.result(ok && v != "", func() bool { return vm.match.matches(v) }) {
			return false
		}
	}
	if m.cel != nil {
		ok, err := m.cel.Eval(ctx)
		if err != nil || !ok {
			return false
		}
	}
	return true
}

// IsEmpty reports a match with no condition (it matches every request).
func (m *Match) IsEmpty() bool {
	return m == nil || (m.path == nil && len(m.methods) == 0 && len(m.headers) == 0 && len(m.query) == 0 &&
		len(m.cookies) == 0 && len(m.vars) == 0 && m.cel == nil)
}

type valueMatcher struct {
	name    string
	match   *stringMatcher // nil: presence only
	present *bool
	invert  bool
}

type varMatcher struct {
	valueMatcher
	v variables.Var
}

// result combines presence, the string match (evaluated only when needed)
// and invert.
func (vm *valueMatcher) result(found bool, value func() bool) bool {
	var r bool
	switch {
	case vm.present != nil:
		r = found == *vm.present
	case vm.match == nil:
		r = found
	default:
		r = found && value()
	}
	return r != vm.invert
}

func anyMatches(sm *stringMatcher, vs []string) bool {
	for _, v := range vs {
		if sm.matches(v) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func urlPath(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		return p[:i]
	}
	return p
}

// stringMatcher is a compiled StringMatch.
type stringMatcher struct {
	kind       byte // 'e'xact, 'p'refix, 's'uffix, 'c'ontains, 'r'egex
	s          string
	re         *regexp.Regexp
	ignoreCase bool
}

func (sm *StringMatch) set() bool {
	return sm.Exact != nil || sm.Prefix != "" || sm.Suffix != "" || sm.Contains != "" || sm.Regex != ""
}

func (sm *StringMatch) compile() (*stringMatcher, error) {
	n := 0
	out := &stringMatcher{ignoreCase: sm.IgnoreCase}
	if sm.Exact != nil {
		n++
		out.kind, out.s = 'e', *sm.Exact
	}
	for _, c := range []struct {
		kind byte
		v    string
	}{{'p', sm.Prefix}, {'s', sm.Suffix}, {'c', sm.Contains}} {
		if c.v != "" {
			n++
			out.kind, out.s = c.kind, c.v
		}
	}
	if sm.Regex != "" {
		n++
		expr := sm.Regex
		if sm.IgnoreCase {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("regex: %v", err)
		}
		out.kind, out.re = 'r', re
	}
	switch {
	case n == 0:
		return nil, fmt.Errorf("give one of exact, prefix, suffix, contains, regex")
	case n > 1:
		return nil, fmt.Errorf("give only one of exact, prefix, suffix, contains, regex")
	}
	if out.ignoreCase && out.kind != 'r' {
		out.s = strings.ToLower(out.s)
	}
	return out, nil
}

func (sm *stringMatcher) matches(v string) bool {
	if sm.kind == 'r' {
		return sm.re.MatchString(v)
	}
	if sm.ignoreCase {
		v = strings.ToLower(v)
	}
	switch sm.kind {
	case 'e':
		return v == sm.s
	case 'p':
		return strings.HasPrefix(v, sm.s)
	case 's':
		return strings.HasSuffix(v, sm.s)
	}
	return strings.Contains(v, sm.s)
}
