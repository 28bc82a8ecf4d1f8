package load

import (
	"strings"
	"unicode"

	"google.golang.org/protobuf/proto"

	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// pgvError is the shape of every protoc-gen-validate error type.
type pgvError interface {
	Field() string
	Reason() string
	Cause() error
}

// AddValidation runs the message's protoc-gen-validate rules (ValidateAll), as Envoy does when
// it loads config, and records each violation under base. PGV does not look inside Any fields,
// so callers run this again on each unpacked Any.
func AddValidation(errs *ypath.Errors, base ypath.Path, m proto.Message) {
	v, ok := m.(interface{ ValidateAll() error })
	if !ok {
		return
	}
	if err := v.ValidateAll(); err != nil {
		flatten(errs, base, err)
	}
}

// flatten walks PGV's nested errors ("embedded message failed validation | caused by: ...")
// and turns the chain of Go field names into one YAML path per leaf violation.
func flatten(errs *ypath.Errors, p ypath.Path, err error) {
	if multi, ok := err.(interface{ AllErrors() []error }); ok {
		for _, e := range multi.AllErrors() {
			flatten(errs, p, e)
		}
		return
	}
	pe, ok := err.(pgvError)
	if !ok {
		errs.Addf(p, "%v", err)
		return
	}
	p = appendGoField(p, pe.Field())
	if pe.Cause() != nil && pe.Reason() == "embedded message failed validation" {
		flatten(errs, p, pe.Cause())
		return
	}
	if pe.Cause() != nil {
		errs.Addf(p, "%s: %v", pe.Reason(), pe.Cause())
		return
	}
	errs.Addf(p, "%s", pe.Reason())
}

// appendGoField converts PGV's "Listeners[0]" / "TypedPerFilterConfig[name]" into YAML path
// segments.
func appendGoField(p ypath.Path, f string) ypath.Path {
	name, rest, hasIdx := strings.Cut(f, "[")
	p = p.Field(snake(name))
	if hasIdx {
		idx := strings.TrimSuffix(rest, "]")
		if n, ok := atoi(idx); ok {
			p = p.Index(n)
		} else {
			p = p.Key(idx)
		}
	}
	return p
}

// snake maps a generated Go field name back to its proto name: "MaxRequestHeadersKb" ->
// "max_request_headers_kb", "Http2ProtocolOptions" -> "http2_protocol_options".
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func atoi(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
