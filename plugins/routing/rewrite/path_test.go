package rewrite

import (
	"testing"
)

func TestNormalizePath(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		merge    bool
		ok       bool
	}{
		{"/a/b", "/a/b", false, true},
		{"/", "/", false, true},
		{"/a/./b", "/a/b", false, true},
		{"/a/../b", "/b", false, true},
		{"/a/b/..", "/a/", false, true},
		{"/a/b/.", "/a/b/", false, true},
		{"/..", "/", false, true},
		{"/../../etc/passwd", "/etc/passwd", false, true},
		{"/api/v1/../../admin", "/admin", false, true},
		{"/a/.b/..c/...", "/a/.b/..c/...", false, true}, // not dot segments
		{"/a/%2e%2E/b", "/b", false, true},              // encoded dots are dots
		{"/a/.%2e/b", "/b", false, true},
		{"/%7Euser/%41%62", "/~user/Ab", false, true}, // unreserved decoded
		{"/a%2fb", "/a%2Fb", false, true},             // encoded slash kept, hex upper-cased
		{"/a%2F..%2Fb", "/a%2F..%2Fb", false, true},   // no segment separator: not a dot segment
		{"/a%20b%3F", "/a%20b%3F", false, true},       // reserved/other kept
		{"/a//b", "/a//b", false, true},
		{"/a//b///c", "/a/b/c", true, true},
		{"//a/../b", "/b", true, true},
		{"/a//../b", "/a/b", false, true}, // RFC 3986: the empty segment is the one removed
		{"/a%", "", false, false},
		{"/a%2", "", false, false},
		{"/a%zz", "", false, false},
		{"/a%2g", "", false, false},
		{"*", "*", false, true},
		{"/a\\..\\b", "/a\\..\\b", false, true}, // backslashes are no separators
	} {
		got, ok := normalizePath(tc.in, tc.merge)
		if ok != tc.ok || got != tc.want {
			t.Errorf("normalizePath(%q, merge=%v) = %q, %v; want %q, %v", tc.in, tc.merge, got, ok, tc.want, tc.ok)
		}
	}
}

func TestSubstitution(t *testing.T) {
	for _, tc := range []struct {
		regex, sub, in, out string
		ok                  bool
	}{
		{`^/users/([0-9]+)/orders$`, `/orders/by-user/\1`, "/users/42/orders", "/orders/by-user/42", true},
		{`^/users/([0-9]+)/orders$`, `/orders/by-user/\1`, "/users/x/orders", "/users/x/orders", false},
		{`/v([0-9])/`, `/version-\1/`, "/v1/a/v2/b", "/version-1/a/version-2/b", true}, // every match, as RE2::GlobalReplace
		{`^/(a)(b)?`, `/\2\1\0`, "/ac", "/a/ac", true},                                 // unmatched group is empty
		{`^/old`, `/new\\x`, "/old/y", "/new\\x/y", true},
		{`^/.*$`, ``, "/x", "/x", false}, // empty result: not rewritten (Envoy's regex_rewrite)
	} {
		c, _ := parse(t, `{"path": {"regex": `+quote(tc.regex)+`, "replacement": `+quote(tc.sub)+`}}`)
		got, ok := c.rewritePath(tc.in)
		if got != tc.out || ok != tc.ok {
			t.Errorf("%s -> %s on %s: %q %v, want %q %v", tc.regex, tc.sub, tc.in, got, ok, tc.out, tc.ok)
		}
	}
}

func quote(s string) string {
	out := []byte{'"'}
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] == '"' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(append(out, '"'))
}
