// Package ypath names places in an Envoy bootstrap the way a user reads their YAML
// (static_resources.listeners[0].address), and collects errors tagged with such paths so
// validate can report every problem at once instead of stopping at the first.
package ypath

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is an immutable YAML path; the zero value is the document root.
type Path struct{ s string }

// Field appends a mapping key written as a bare name.
func (p Path) Field(name string) Path {
	if p.s == "" {
		return Path{name}
	}
	return Path{p.s + "." + name}
}

// Index appends a sequence index.
func (p Path) Index(i int) Path { return Path{p.s + "[" + strconv.Itoa(i) + "]"} }

// Key appends a map key. It is quoted because Envoy map keys (filter names) contain dots.
func (p Path) Key(k string) Path { return Path{p.s + "[" + strconv.Quote(k) + "]"} }

func (p Path) String() string {
	if p.s == "" {
		return "(root)"
	}
	return p.s
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
