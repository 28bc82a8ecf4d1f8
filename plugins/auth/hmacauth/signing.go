package hmacauth

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// checkHeaderList validates the space-separated headers="..." list: lower-case
// names or the request-target token, no duplicates (a duplicate would let two
// different requests share a signing string shape). It returns the count.
func checkHeaderList(list string) (int, bool) {
	n := 0
	for rest := list; rest != ""; {
		var name string
		name, rest, _ = strings.Cut(rest, " ")
		if name == "" {
			return 0, false // double space, or leading/trailing space
		}
		if name != targetToken && name != cavageTargetToken {
			if !api.ValidHeaderName(name) || strings.ToLower(name) != name {
				return 0, false
			}
		}
		// Stop early: the duplicate check is quadratic, keep it bounded.
		if n == maxSignedHeaders || listedBefore(list, name, n) {
			return 0, false
		}
		n++
	}
	return n, true
}

// listedBefore reports whether name appears among the first n names of list.
func listedBefore(list, name string, n int) bool {
	for i := 0; i < n; i++ {
		var x string
		x, list, _ = strings.Cut(list, " ")
		if x == name {
			return true
		}
	}
	return false
}

// listed reports whether the space-separated list contains name. The two
// request-target spellings are the same thing.
func listed(list, name string) bool {
	for list != "" {
		var x string
		x, list, _ = strings.Cut(list, " ")
		if x == name || (isTarget(x) && isTarget(name)) {
			return true
		}
	}
	return false
}

func isTarget(s string) bool { return s == targetToken || s == cavageTargetToken }

// appendSigningString builds the signing string (see README.md):
//
//	<name>: <value>       one line per entry of headers="...", in that order,
//	                      joined by "\n", no trailing newline;
//	@request-target: <lower-case method> <:path as received, query included>
//	host: the :authority; other headers: all values, trimmed, joined by ", ".
//
// missing=true when a listed header is absent.
func appendSigningString(b []byte, h api.RequestHeaderMap, list string) (_ []byte, missing bool) {
	first := true
	for list != "" {
		var name string
		name, list, _ = strings.Cut(list, " ")
		if !first {
			b = append(b, '\n')
		}
		first = false
		b = append(b, name...)
		b = append(b, ':', ' ')
		switch {
		case isTarget(name):
			b = appendLower(b, h.Method())
			b = append(b, ' ')
			b = append(b, h.Path()...)
		case name == "host":
			host := h.Host()
			if host == "" {
				return b, true
			}
			b = append(b, host...)
		default:
			vs := h.Values(name)
			if len(vs) == 0 {
				return b, true
			}
			for i, v := range vs {
				if i > 0 {
					b = append(b, ',', ' ')
				}
				b = append(b, strings.TrimSpace(v)...)
			}
		}
	}
	return b, false
}

func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

// parseDate accepts an HTTP date (IMF-fixdate and the two obsolete forms, as
// net/http does) or unix seconds.
func parseDate(v string) (time.Time, bool) {
	if v != "" && v[0] >= '0' && v[0] <= '9' && len(v) <= 12 {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Unix(n, 0), true
		}
	}
	t, err := http.ParseTime(v)
	return t, err == nil
}
