package authn

import "strings"

// QueryParam returns the first value of the query parameter name in path
// (":path" with its query) without building a map. Names and values are
// percent-decoded only when they contain an escape.
func QueryParam(path, name string) (string, bool) {
	i := strings.IndexByte(path, '?')
	if i < 0 {
		return "", false
	}
	q := path[i+1:]
	if j := strings.IndexByte(q, '#'); j >= 0 {
		q = q[:j]
	}
	for q != "" {
		var kv string
		kv, q, _ = strings.Cut(q, "&")
		k, v, _ := strings.Cut(kv, "=")
		if k == name || (strings.ContainsAny(k, "%+") && unescape(k) == name) {
			if strings.ContainsAny(v, "%+") {
				v = unescape(v)
			}
			return v, true
		}
	}
	return "", false
}

// Cookie returns the value of cookie name from the Cookie header lines.
func Cookie(lines []string, name string) (string, bool) {
	for _, line := range lines {
		for line != "" {
			var kv string
			kv, line, _ = strings.Cut(line, ";")
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if ok && k == name {
				if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
					v = v[1 : len(v)-1]
				}
				return v, true
			}
		}
	}
	return "", false
}
