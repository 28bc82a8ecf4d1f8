package trace

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
)

// W3C Trace Context (https://www.w3.org/TR/trace-context/): the traceparent
// header is version-traceid-parentid-flags in lower-case hex, e.g.
// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.

const (
	traceparentLen = 55
	flagSampled    = 0x01
)

type traceID [16]byte
type spanID [8]byte

func (t traceID) isZero() bool { return t == traceID{} }
func (s spanID) isZero() bool  { return s == spanID{} }

// parent is what a valid incoming traceparent says.
type parent struct {
	trace traceID
	span  spanID
	flags byte
}

// parseTraceparent parses a traceparent value; false for anything the spec
// says to ignore: wrong length or separators, upper-case or non-hex digits,
// version ff, an all-zero trace or parent id, or a version 00 header with
// trailing data. A higher version may carry more fields after the flags; its
// first four are read, as the spec asks.
func parseTraceparent(v string) (parent, bool) {
	var p parent
	if len(v) < traceparentLen || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return p, false
	}
	ver, ok := hexByte(v[0], v[1])
	if !ok || ver == 0xff {
		return p, false
	}
	if ver == 0 && len(v) != traceparentLen {
		return p, false
	}
	if len(v) > traceparentLen && v[traceparentLen] != '-' {
		return p, false
	}
	if !decodeHex(p.trace[:], v[3:35]) || !decodeHex(p.span[:], v[36:52]) || p.trace.isZero() || p.span.isZero() {
		return p, false
	}
	if p.flags, ok = hexByte(v[53], v[54]); !ok {
		return p, false
	}
	return p, true
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false // upper case is invalid in traceparent
}

func hexByte(a, b byte) (byte, bool) {
	x, ok1 := hexVal(a)
	y, ok2 := hexVal(b)
	return x<<4 | y, ok1 && ok2
}

func decodeHex(dst []byte, s string) bool {
	for i := range dst {
		b, ok := hexByte(s[2*i], s[2*i+1])
		if !ok {
			return false
		}
		dst[i] = b
	}
	return true
}

const hexDigits = "0123456789abcdef"

func appendHex(dst []byte, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}

// formatTraceparent is the version 00 header for a span.
func formatTraceparent(t traceID, s spanID, flags byte) string {
	b := make([]byte, 0, traceparentLen)
	b = append(b, "00-"...)
	b = appendHex(b, t[:])
	b = append(b, '-')
	b = appendHex(b, s[:])
	b = append(b, '-', hexDigits[flags>>4], hexDigits[flags&0xf])
	return string(b)
}

// newTraceID and newSpanID are random and never zero (math/rand/v2's
// generator is seeded from the system and not shared between threads).
func newTraceID() traceID {
	var t traceID
	for t.isZero() {
		binary.BigEndian.PutUint64(t[:8], rand.Uint64())
		binary.BigEndian.PutUint64(t[8:], rand.Uint64())
	}
	return t
}

func newSpanID() spanID {
	var s spanID
	for s.isZero() {
		binary.BigEndian.PutUint64(s[:], rand.Uint64())
	}
	return s
}

// sampledByRatio is OpenTelemetry's TraceIDRatioBased decision: the lower
// 8 bytes of the trace id against ratio, so every hop that uses the same
// ratio takes the same decision for a trace.
func sampledByRatio(t traceID, bound uint64) bool {
	return binary.BigEndian.Uint64(t[8:16])>>1 < bound
}

// ratioBound is the threshold for sampledByRatio.
func ratioBound(ratio float64) uint64 {
	if ratio >= 1 {
		return 1 << 63
	}
	return uint64(ratio * (1 << 63))
}

// newRequestID is a random UUID version 4.
func newRequestID() string {
	var u [16]byte
	binary.BigEndian.PutUint64(u[:8], rand.Uint64())
	binary.BigEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	b := make([]byte, 0, 36)
	b = appendHex(b, u[0:4])
	b = append(b, '-')
	b = appendHex(b, u[4:6])
	b = append(b, '-')
	b = appendHex(b, u[6:8])
	b = append(b, '-')
	b = appendHex(b, u[8:10])
	b = append(b, '-')
	b = appendHex(b, u[10:16])
	return string(b)
}

// validTracestate is a light check of a tracestate value: at most 32
// list-members, each key=value, 512 characters in all at most (what the
// spec requires a vendor to propagate). An invalid one is dropped.
func validTracestate(s string) bool {
	if len(s) > 512 {
		return false
	}
	n := 0
	for rest := s; ; {
		var m string
		var more bool
		m, rest, more = strings.Cut(rest, ",")
		m = strings.Trim(m, " \t")
		if m != "" {
			n++
			eq := strings.IndexByte(m, '=')
			if eq <= 0 || eq == len(m)-1 {
				return false
			}
		}
		if !more {
			break
		}
	}
	return n <= 32
}
