package rewrite

import (
	"strings"
)

// normalizePath normalizes a path without its query, as Envoy's
// normalize_path does it with RFC 3986 in mind (source/common/http/
// path_utility.cc canonicalPath; the rules here are written out, not copied
// from Chromium's canonicalizer Envoy uses):
//
//   - "%XX" of an unreserved character (A-Z a-z 0-9 - . _ ~) is decoded, every
//     other escape is kept with upper-case hex ("%2f" -> "%2F", which stays an
//     escape: an encoded slash never becomes a segment separator);
//   - a '%' not followed by two hex digits makes the path invalid (ok false);
//   - with mergeSlashes, runs of '/' become one;
//   - "." and ".." segments are removed (RFC 3986 5.2.4); ".." above the root
//     stays at the root, and a path ending in "." or ".." ends with '/'.
//
// A path that does not start with '/' (OPTIONS *) is returned unchanged.
func normalizePath(p string, mergeSlashes bool) (string, bool) {
	if p == "" || p[0] != '/' {
		return p, true
	}
	// Fast path: nothing to decode, no dot segment, no double slash.
	if !needsWork(p, mergeSlashes) {
		return p, true
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '%' {
			if c == '/' && mergeSlashes && b.Len() > 0 && lastByte(&b) == '/' {
				continue
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			return "", false
		}
		d := unhex(p[i+1])<<4 | unhex(p[i+2])
		if unreserved(d) {
			b.WriteByte(d)
		} else {
			b.WriteByte('%')
			b.WriteByte(upperHex(p[i+1]))
			b.WriteByte(upperHex(p[i+2]))
		}
		i += 2
	}
	return removeDotSegments(b.String()), true
}

func lastByte(b *strings.Builder) byte {
	s := b.String()
	return s[len(s)-1]
}

// needsWork reports whether normalizePath would change p.
func needsWork(p string, mergeSlashes bool) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%':
			return true
		case '.':
			// A dot segment: "/." or "/.." followed by '/' or the end.
			if p[i-1] == '/' {
				j := i + 1
				if j < len(p) && p[j] == '.' {
					j++
				}
				if j == len(p) || p[j] == '/' {
					return true
				}
			}
		case '/':
			if mergeSlashes && i > 0 && p[i-1] == '/' {
				return true
			}
		}
	}
	return false
}

// removeDotSegments is RFC 3986 5.2.4 on an absolute path.
func removeDotSegments(p string) string {
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func upperHex(c byte) byte {
	if 'a' <= c && c <= 'f' {
		return c - 'a' + 'A'
	}
	return c
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// rewritePath applies the prefix or regex rewrite to a path without query.
// ok is false when the rewrite does not apply (no prefix, no regex match,
// or an empty regex result, which Envoy's regex_rewrite also ignores:
// config_impl.cc rewritePathByPrefixOrRegex).
func (c *Config) rewritePath(p string) (string, bool) {
	pr := c.Path
	if pr.Prefix != "" {
		if !strings.HasPrefix(p, pr.Prefix) {
			return p, false
		}
		out := pr.Replacement + p[len(pr.Prefix):]
		if out == "" || out[0] != '/' {
			out = "/" + out
		}
		return out, true
	}
	if c.re == nil {
		return p, false
	}
	ms := c.re.FindAllStringSubmatchIndex(p, -1)
	if ms == nil {
		return p, false
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		b.WriteString(p[last:m[0]])
		for _, part := range c.sub {
			if part.group < 0 {
				b.WriteString(part.lit)
			} else if s, e := m[2*part.group], m[2*part.group+1]; s >= 0 {
				b.WriteString(p[s:e])
			}
		}
		last = m[1]
	}
	b.WriteString(p[last:])
	out := b.String()
	if out == "" {
		return p, false
	}
	return out, true
}
