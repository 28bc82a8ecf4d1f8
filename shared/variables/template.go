package variables

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// Template is text with variables, e.g. "$route_name:$header_x-user", parsed
// once at config time. Syntax: "$name" where name is letters, digits, '_', '-'
// and '.'; "${name}" delimits a name followed by such a character; "$$" is a
// literal '$'. Variables without a value render as empty strings.
type Template struct {
	src   string
	parts []part
	size  int // literal bytes, a hint for the render buffer
}

type part struct {
	lit string
	v   Var
	isV bool
}

func isNameChar(c byte) bool {
	return c == '_' || c == '-' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// CompileTemplate parses a template; unknown variables are errors.
func CompileTemplate(src string) (*Template, error) {
	t := &Template{src: src}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{lit: lit.String()})
			t.size += lit.Len()
			lit.Reset()
		}
	}
	for i := 0; i < len(src); {
		c := src[i]
		if c != '$' {
			lit.WriteByte(c)
			i++
			continue
		}
		if i+1 < len(src) && src[i+1] == '$' {
			lit.WriteByte('$')
			i += 2
			continue
		}
		var name string
		if i+1 < len(src) && src[i+1] == '{' {
			end := strings.IndexByte(src[i+2:], '}')
			if end < 0 {
				return nil, fmt.Errorf("template %q: unclosed ${ at offset %d", src, i)
			}
			name = src[i+2 : i+2+end]
			i += 3 + end
		} else {
			j := i + 1
			for j < len(src) && isNameChar(src[j]) {
				j++
			}
			name = src[i+1 : j]
			i = j
		}
		// A trailing '.' or '-' is more likely punctuation than part of a name.
		trail := ""
		for len(name) > 0 && (name[len(name)-1] == '.') {
			trail = "." + trail
			name = name[:len(name)-1]
		}
		if name == "" {
			return nil, fmt.Errorf("template %q: '$' without a variable name (use $$ for a literal $)", src)
		}
		v, err := Compile(name)
		if err != nil {
			return nil, fmt.Errorf("template %q: %w", src, err)
		}
		flush()
		t.parts = append(t.parts, part{v: v, isV: true})
		lit.WriteString(trail)
	}
	flush()
	return t, nil
}

// MustCompileTemplate panics on error (for package-level templates).
func MustCompileTemplate(src string) *Template {
	t, err := CompileTemplate(src)
	if err != nil {
		panic(err)
	}
	return t
}

// String returns the source text.
func (t *Template) String() string { return t.src }

// Render evaluates the template for a request.
func (t *Template) Render(ctx api.Context) string {
	if len(t.parts) == 1 {
		p := t.parts[0]
		if !p.isV {
			return p.lit
		}
		s, _ := p.v.Get(ctx)
		return s
	}
	return string(t.AppendTo(make([]byte, 0, t.size+32), ctx))
}

// RenderComplete renders like Render and also reports whether every variable
// had a non-empty value, so a caller can tell "$route_name:$header_x-user"
// without the header from a full key (e.g. to reject it). A template of one
// variable costs no allocation.
func (t *Template) RenderComplete(ctx api.Context) (string, bool) {
	if len(t.parts) == 1 {
		p := t.parts[0]
		if !p.isV {
			return p.lit, true
		}
		s, ok := p.v.Get(ctx)
		return s, ok && s != ""
	}
	buf := make([]byte, 0, t.size+32)
	complete := true
	for _, p := range t.parts {
		if !p.isV {
			buf = append(buf, p.lit...)
			continue
		}
		s, ok := p.v.Get(ctx)
		complete = complete && ok && s != ""
		buf = append(buf, s...)
	}
	return string(buf), complete
}

// AppendTo renders into dst (to reuse a buffer).
func (t *Template) AppendTo(dst []byte, ctx api.Context) []byte {
	for _, p := range t.parts {
		if p.isV {
			s, _ := p.v.Get(ctx)
			dst = append(dst, s...)
		} else {
			dst = append(dst, p.lit...)
		}
	}
	return dst
}

func (t *Template) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("expected a template string like \"$route_name:$header_x-user\"")
	}
	c, err := CompileTemplate(s)
	if err != nil {
		return err
	}
	*t = *c
	return nil
}

func (t Template) MarshalJSON() ([]byte, error) { return json.Marshal(t.src) }

// ConfigType names the type in generated docs and schemas.
func (*Template) ConfigType() string { return "template" }
