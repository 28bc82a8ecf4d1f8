package api

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unsafe"
)

// HeaderMap is a request or response header (or trailer) map. Keys are
// case-insensitive (stored lower case, HTTP/2 style). Reads are served from Go
// memory: the framework copies headers from Envoy at most once per phase.
// Writes are kept in Go and sent to Envoy in as few calls as possible when the
// chain hands the stream back (see shared/README.md).
//
// Methods with an error result return a *StreamError when the stream is not
// owned by the chain; methods without one (Get, Values, Range, Len) panic with a
// *StreamError instead. The framework recovers those panics in plugin phases and
// in goroutines started with Go().
type HeaderMap interface {
	// Get returns the first value of key.
	Get(key string) (string, bool)
	// Values returns all values of key (nil if absent). It is the map's own
	// slice, not a copy (no allocation per call): do not modify its elements.
	// Later writes do not change a slice already returned, and appending to it
	// reallocates.
	Values(key string) []string
	// Set replaces all values of key.
	Set(key, value string) error
	// Add appends a value to key.
	Add(key, value string) error
	// Del removes key.
	Del(key string) error
	// Range calls f for every key/value pair until f returns false, in the
	// order Envoy has them (changes not yet sent to Envoy last, in the order
	// first made). f may call other methods of the map (Range iterates over a
	// snapshot).
	Range(f func(key, value string) bool)
	// Len is the number of distinct keys.
	Len() int
}

// RequestHeaderMap adds request pseudo-header helpers.
type RequestHeaderMap interface {
	HeaderMap
	Method() string
	Path() string // includes the query string, as in :path
	Host() string // :authority
	Scheme() string
	SetMethod(string) error
	SetPath(string) error
	SetHost(string) error
}

// ResponseHeaderMap adds the response status.
type ResponseHeaderMap interface {
	HeaderMap
	// Status is the :status code, 0 if absent or malformed.
	Status() int
	SetStatus(code int) error
}

// Headers is a plain HeaderMap for building replies:
//
//	h.SendHijackReply(403, api.Headers{"x-reason": {"denied"}})
//
// Keys must be lower case when written as a literal; methods lower-case them.
// A nil Headers is a valid empty map for reading.
type Headers map[string][]string

// NewHeaders builds Headers from key, value pairs.
func NewHeaders(kv ...string) Headers {
	h := make(Headers, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func (h Headers) Get(key string) (string, bool) {
	v := h[LowerKey(key)]
	if len(v) == 0 {
		return "", false
	}
	return v[0], true
}
func (h Headers) Values(key string) []string { return h[LowerKey(key)] }
func (h Headers) Set(key, value string) error {
	h[LowerKey(key)] = []string{value}
	return nil
}
func (h Headers) Add(key, value string) error {
	k := LowerKey(key)
	h[k] = append(h[k], value)
	return nil
}
func (h Headers) Del(key string) error {
	delete(h, LowerKey(key))
	return nil
}
func (h Headers) Range(f func(key, value string) bool) {
	for k, vs := range h {
		for _, v := range vs {
			if !f(k, v) {
				return
			}
		}
	}
}
func (h Headers) Len() int { return len(h) }

// Status reads :status (for Headers used as response headers).
func (h Headers) Status() int {
	v, _ := h.Get(":status")
	n, _ := strconv.Atoi(v)
	return n
}

// LowerKey lower-cases an ASCII header name without allocating when it is
// already lower case (the common case). Every header read and write calls it,
// so names of eight bytes or more are checked a word at a time.
func LowerKey(s string) string {
	if len(s) >= 8 {
		if longHasUpperASCII(s) {
			return strings.ToLower(s)
		}
		return s
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// longHasUpperASCII reports whether s, at least eight bytes long, has a byte
// in 'A'..'Z': eight bytes at a time, the last word overlapping the one
// before.
func longHasUpperASCII(s string) bool {
	n := len(s)
	b := unsafe.Slice(unsafe.StringData(s), n)
	for i := 0; ; i += 8 {
		i = min(i, n-8)
		if wordHasUpperASCII(binary.LittleEndian.Uint64(b[i:])) {
			return true
		}
		if i == n-8 {
			return false
		}
	}
}

// wordHasUpperASCII reports whether one of w's bytes is in 'A'..'Z'. On the
// low seven bits of each byte, adding 0x80-'A' sets bit 7 when the byte is at
// least 'A', adding 0x80-'Z'-1 when it is past 'Z'; neither sum carries into
// the next byte. Bytes with bit 7 set are never upper-case ASCII.
func wordHasUpperASCII(w uint64) bool {
	const (
		low7 = 0x7f7f7f7f7f7f7f7f
		bit7 = 0x8080808080808080
		geA  = 0x3f3f3f3f3f3f3f3f // 0x80 - 'A'
		gtZ  = 0x2525252525252525 // 0x80 - 'Z' - 1
	)
	x := w & low7
	return (x+geA)&^(x+gtZ)&^w&bit7 != 0
}
