// Package ypath names places in an Envoy bootstrap the way a user reads their YAML
// (static_resources.listeners[0].address), and collects errors tagged with such paths so
// validate can report every problem at once instead of stopping at the first.
package ypath

import (
	"fmt"
	"strconv"
	"strings"
)

// Seg is one step of a path: a mapping key (Name, for a field written as a bare name, or a
// quoted map key) or a sequence index.
type Seg struct {
	Name   string
	Index  int
	IsIdx  bool
	Quoted bool // a map key printed as ["..."] (Envoy map keys such as filter names contain dots)
}

// Path is an immutable YAML path; the zero value is the document root.
type Path struct {
	s    string
	segs []Seg
}

func (p Path) with(s string, seg Seg) Path {
	segs := make([]Seg, len(p.segs), len(p.segs)+1)
	copy(segs, p.segs)
	return Path{s: s, segs: append(segs, seg)}
}

// Field appends a mapping key written as a bare name.
func (p Path) Field(name string) Path {
	if p.s == "" {
		return p.with(name, Seg{Name: name})
	}
	return p.with(p.s+"."+name, Seg{Name: name})
}

// Index appends a sequence index.
func (p Path) Index(i int) Path {
	return p.with(p.s+"["+strconv.Itoa(i)+"]", Seg{Index: i, IsIdx: true})
}

// Key appends a map key. It is quoted because Envoy map keys (filter names) contain dots.
func (p Path) Key(k string) Path {
	return p.with(p.s+"["+strconv.Quote(k)+"]", Seg{Name: k, Quoted: true})
}

// Join appends every segment of q.
func (p Path) Join(q Path) Path {
	for _, s := range q.segs {
		p = p.Append(s)
	}
	return p
}

// Append appends one segment.
func (p Path) Append(s Seg) Path {
	switch {
	case s.IsIdx:
		return p.Index(s.Index)
	case s.Quoted:
		return p.Key(s.Name)
	}
	return p.Field(s.Name)
}

// Segments returns the path's steps (a copy).
func (p Path) Segments() []Seg { return append([]Seg(nil), p.segs...) }

// Len is the number of steps.
func (p Path) Len() int { return len(p.segs) }

// HasPrefix reports whether q's steps start p's.
func (p Path) HasPrefix(q Path) bool {
	if len(q.segs) > len(p.segs) {
		return false
	}
	for i, s := range q.segs {
		t := p.segs[i]
		if s.IsIdx != t.IsIdx || s.Index != t.Index || s.Name != t.Name {
			return false
		}
	}
	return true
}

func (p Path) String() string {
	if p.s == "" {
		return "(root)"
	}
	return p.s
}

// Raw is the path without the "(root)" spelling of the empty path.
func (p Path) Raw() string { return p.s }

// Parse reads a path written like String prints it: a.b[0]["c.d"].e. Field paths of plugin
// config errors ("consumers[1].keys[0]") use the same form. Parse is lenient: text it cannot
// read ends up as one field name.
func Parse(s string) Path {
	var p Path
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			i++
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return p.Field(s[i:])
			}
			inner := s[i+1 : i+end]
			if n, err := strconv.Atoi(inner); err == nil {
				p = p.Index(n)
				i += end + 1
				continue
			}
			if strings.HasPrefix(inner, `"`) {
				// A quoted key may contain ']': find the closing quote first.
				if q, err := strconv.QuotedPrefix(s[i+1:]); err == nil && strings.HasPrefix(s[i+1+len(q):], "]") {
					k, _ := strconv.Unquote(q)
					p = p.Key(k)
					i += 1 + len(q) + 1
					continue
				}
			}
			p = p.Key(inner)
			i += end + 1
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			p = p.Field(s[i:j])
			i = j
		}
	}
	return p
}

// Error is one problem at one place in the YAML.
type Error struct {
	Path Path
	Msg  string
}

func (e *Error) Error() string { return e.Path.String() + ": " + e.Msg }

// Errors accumulates problems; its zero value is ready to use.
type Errors struct{ list []error }

// Addf records a problem at p.
func (es *Errors) Addf(p Path, format string, args ...any) {
	es.list = append(es.list, &Error{Path: p, Msg: fmt.Sprintf(format, args...)})
}

// Len is the number of problems recorded so far.
func (es *Errors) Len() int { return len(es.list) }

// List returns the problems recorded so far (the caller must not modify them).
func (es *Errors) List() []error { return es.list }

// Err returns nil when nothing was recorded, else a List of every problem in order.
func (es *Errors) Err() error {
	if len(es.list) == 0 {
		return nil
	}
	return List(append([]error(nil), es.list...))
}

// List is several errors, printed one per line.
type List []error

func (l List) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap lets errors.Is/As look inside.
func (l List) Unwrap() []error { return l }
