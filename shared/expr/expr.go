// Package expr compiles CEL expressions (cel-go) over a request once, at
// config time, and evaluates them per request. A plugin declares a field of
// type *expr.Bool (a condition) or *expr.String (a value); decoding the
// config compiles and type-checks the expression, so a syntax error, an
// unknown attribute or a wrong result type is a config error naming the
// field and the position:
//
//	when: 'request.headers["x-canary"] == "1" && source.ip.startsWith("10.")'
//	-> field rules[0].when: line 1, column 17: undeclared reference to 'sourc' ...
//
// The attributes follow Envoy's names (request.*, source.*, xds.*,
// response.*) where Envoy has them, plus the consumer and moe's variables;
// see Attributes. They are resolved lazily per evaluation: an expression
// that reads one header costs one header lookup, not a copy of the map.
// Every evaluation is bounded by a cost limit, so no expression can stall
// Envoy's worker thread.
package expr

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/moeproxy/moe/shared/api"
)

// CostLimit bounds one evaluation, in CEL's cost units (about one per
// operation, one per hundred bytes of string work: a 4 MiB contains() costs
// ~42,000). Expressions over request attributes cost tens to hundreds; the
// limit ends a pathological one (string work over megabytes, a comprehension
// over a huge list) after well under a millisecond instead of stalling
// Envoy's worker thread.
const CostLimit = 20_000

// attribute is one name an expression can use.
type attribute struct {
	name string
	typ  *cel.Type
	doc  string
	get  func(r *request) any
}

var mapSS = cel.MapType(cel.StringType, cel.StringType)

// attributes is the table of names, in the order Attributes documents them.
var attributes = []attribute{
	{"request.method", cel.StringType, "request method", func(r *request) any { return r.headers().Method() }},
	{"request.path", cel.StringType, "request path with the query (Envoy's request.path)", func(r *request) any { return r.headers().Path() }},
	{"request.url_path", cel.StringType, "request path without the query", func(r *request) any { return urlPath(r.headers().Path()) }},
	{"request.query", cel.StringType, "the query string, without '?'", func(r *request) any { return query(r.headers().Path()) }},
	{"request.host", cel.StringType, "the :authority", func(r *request) any { return r.headers().Host() }},
	{"request.scheme", cel.StringType, "http or https", func(r *request) any { return r.headers().Scheme() }},
	{"request.id", cel.StringType, "the request id (x-request-id)", func(r *request) any { return r.ctx.RequestID() }},
	{"request.headers", mapSS, "request headers by lower-case name; repeated ones joined with \",\"", func(r *request) any { return r.headerMap(false) }},
	{"request.query_params", mapSS, "query parameters, decoded (first value of each)", func(r *request) any { return r.queryMap() }},
	{"request.cookies", mapSS, "cookies by name", func(r *request) any { return r.cookieMap() }},
	{"source.address", cel.StringType, "the client's address, ip:port (Envoy's source.address)", func(r *request) any { return r.remote() }},
	{"source.ip", cel.StringType, "the client's IP, without the port", func(r *request) any { ip, _ := splitAddress(r.remote()); return ip }},
	{"source.port", cel.IntType, "the client's port", func(r *request) any { _, p := splitAddress(r.remote()); return atoi(p) }},
	{"xds.route_name", cel.StringType, "the route's name", func(r *request) any { return r.ctx.Receiver().Route().RouteName() }},
	{"xds.cluster_name", cel.StringType, "the route's cluster", func(r *request) any { return r.ctx.Receiver().Route().ClusterName() }},
	{"response.code", cel.IntType, "the response status (0 before the response)", func(r *request) any { return int64(r.status()) }},
	{"response.headers", mapSS, "response headers by lower-case name (empty before the response)", func(r *request) any { return r.headerMap(true) }},
	{"consumer.name", cel.StringType, "the authenticated consumer (\"\" when none)", func(r *request) any { return r.consumerName() }},
	{"consumer.group", cel.StringType, "the consumer's group", func(r *request) any { return r.consumerGroup() }},
	{"consumer.attributes", mapSS, "the consumer's attributes", func(r *request) any { return r.consumerAttributes() }},
	{"vars", mapSS, "moe variables by name without '$': vars[\"header_x-user\"], vars[\"route_name\"], plugin-registered ones", func(r *request) any { return r.varMap() }},
}

var byName = func() map[string]*attribute {
	m := make(map[string]*attribute, len(attributes))
	for i := range attributes {
		m[attributes[i].name] = &attributes[i]
	}
	return m
}()

// Attributes lists the names an expression can use with their CEL types and
// meaning, for docs and tools.
func Attributes() [][3]string {
	out := make([][3]string, len(attributes))
	for i, a := range attributes {
		out[i] = [3]string{a.name, a.typ.String(), a.doc}
	}
	return out
}

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
)

// environment is the one CEL environment (declarations only; safe to share).
func environment() (*cel.Env, error) {
	envOnce.Do(func() {
		opts := []cel.EnvOption{cel.OptionalTypes()}
		for _, a := range attributes {
			opts = append(opts, cel.Variable(a.name, a.typ))
		}
		env, envErr = cel.NewEnv(opts...)
	})
	return env, envErr
}

// program is a compiled, type-checked expression.
type program struct {
	src string
	prg cel.Program
}

// compile parses and checks src, which must produce want.
func compile(src string, want *cel.Type) (*program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	e, err := environment()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	ast, iss := e.Compile(src)
	if iss.Err() != nil {
		return nil, fmt.Errorf("%s", position(iss.Err().Error()))
	}
	if !ast.OutputType().IsExactType(want) && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("the expression is %s, want %s", ast.OutputType(), want)
	}
	prg, err := e.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(CostLimit))
	if err != nil {
		return nil, fmt.Errorf("%v", err)
	}
	return &program{src: src, prg: prg}, nil
}

// position rewrites cel-go's "ERROR: <input>:1:5: msg" lines as "line 1,
// column 5: msg" (the source excerpt lines are dropped).
func position(msg string) string {
	var out []string
	for _, line := range strings.Split(msg, "\n") {
		rest, ok := strings.CutPrefix(line, "ERROR: <input>:")
		if !ok {
			continue
		}
		var l, c int
		if n, _ := fmt.Sscanf(rest, "%d:%d:", &l, &c); n == 2 {
			_, m, _ := strings.Cut(strings.SplitN(rest, ":", 3)[2], " ")
			out = append(out, fmt.Sprintf("line %d, column %d: %s", l, c, strings.TrimSpace(m)))
			continue
		}
		out = append(out, rest)
	}
	if len(out) == 0 {
		return msg
	}
	return strings.Join(out, "; ")
}

func (p *program) eval(ctx api.Context) (ref.Val, error) {
	r := &request{ctx: ctx}
	v, _, err := p.prg.Eval(r)
	if err != nil {
		return nil, fmt.Errorf("evaluating %q: %w", p.src, err)
	}
	return v, nil
}

// Bool is a compiled condition (a CEL expression of type bool).
type Bool struct{ p *program }

// CompileBool compiles a condition.
func CompileBool(src string) (*Bool, error) {
	p, err := compile(src, cel.BoolType)
	if err != nil {
		return nil, err
	}
	return &Bool{p}, nil
}

// Eval evaluates the condition for a request. An evaluation error (a missing
// map key, the cost limit) is false with the error, for the caller to count
// or log.
func (b *Bool) Eval(ctx api.Context) (bool, error) {
	v, err := b.p.eval(ctx)
	if err != nil {
		return false, err
	}
	t, ok := v.(types.Bool)
	if !ok {
		return false, fmt.Errorf("evaluating %q: got %s, want bool", b.p.src, v.Type().TypeName())
	}
	return bool(t), nil
}

// String is a compiled value (a CEL expression of type string).
type String struct{ p *program }

// CompileString compiles a string-valued expression.
func CompileString(src string) (*String, error) {
	p, err := compile(src, cel.StringType)
	if err != nil {
		return nil, err
	}
	return &String{p}, nil
}

// Eval evaluates the expression for a request.
func (s *String) Eval(ctx api.Context) (string, error) {
	v, err := s.p.eval(ctx)
	if err != nil {
		return "", err
	}
	t, ok := v.(types.String)
	if !ok {
		return "", fmt.Errorf("evaluating %q: got %s, want string", s.p.src, v.Type().TypeName())
	}
	return string(t), nil
}

// Source is the expression's text.
func (b *Bool) Source() string   { return b.p.src }
func (s *String) Source() string { return s.p.src }

func (b *Bool) UnmarshalJSON(data []byte) error {
	src, err := unquote(data)
	if err != nil {
		return err
	}
	c, err := CompileBool(src)
	if err != nil {
		return err
	}
	*b = *c
	return nil
}

func (s *String) UnmarshalJSON(data []byte) error {
	src, err := unquote(data)
	if err != nil {
		return err
	}
	c, err := CompileString(src)
	if err != nil {
		return err
	}
	*s = *c
	return nil
}

func unquote(data []byte) (string, error) {
	var src string
	if err := json.Unmarshal(data, &src); err != nil {
		return "", fmt.Errorf("expected a CEL expression as a string")
	}
	return src, nil
}

func (b Bool) MarshalJSON() ([]byte, error)   { return json.Marshal(b.p.src) }
func (s String) MarshalJSON() ([]byte, error) { return json.Marshal(s.p.src) }

// ConfigType names the types in generated docs and schemas.
func (*Bool) ConfigType() string   { return "cel" }
func (*String) ConfigType() string { return "cel" }
