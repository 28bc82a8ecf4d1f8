package logsink

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string (quoted; control characters,
// quotes and backslashes escaped; invalid UTF-8 replaced by U+FFFD).
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// EscapeControl rewrites control bytes (< 0x20 and 0x7f) in b[from:] as
// \xHH, so that a value cannot break a text log line in two. It returns b
// unchanged (no copy) when there is none.
func EscapeControl(b []byte, from int) []byte {
	i := from
	for ; i < len(b); i++ {
		if b[i] < 0x20 || b[i] == 0x7f {
			break
		}
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for ; i < len(b); i++ {
		c := b[i]
		if c < 0x20 || c == 0x7f {
			out = append(out, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			continue
		}
		out = append(out, c)
	}
	return out
}
