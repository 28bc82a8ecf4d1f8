package variables_test

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/variables"
)

func fuzzContext(path string, headers ...string) *fakeframework.Context {
	req := fakeframework.NewRequest("GET", path, headers...)
	c := fakeframework.NewContext("fuzz", req).From("192.0.2.1:5555")
	c.RouteName, c.Cluster = "r1", "c1"
	return c.WithResponse(fakeframework.NewResponse(200, "x-r", "1"))
}

// FuzzCompileTemplate: any template text either compiles or is refused
// with an error; a compiled one keeps its source and renders without
// panicking; and the same text with every '$' doubled is a pure literal
// that renders back to the text.
func FuzzCompileTemplate(f *testing.F) {
	for _, s := range []string{
		"$route_name:$header_x-user", "${host}x", "$$", "$", "${", "${}", "$remote_addr.", "$arg_q$cookie_sid",
		"$header_X-Forwarded-For,$remote_port", "a$method-b", "${header_x-a}${resp_header_x-r}", "$status $duration_ms $request_id",
		"$unknown_variable", "$consumer/$consumer_group", "$query$path$request_uri$scheme", "$plugin",
	} {
		f.Add(s, "/a?q=1&q=2", "sid=s1; a=2")
	}
	f.Fuzz(func(t *testing.T, src, path, cookie string) {
		if len(src) > 4096 {
			t.Skip()
		}
		ctx := fuzzContext(path, "cookie", cookie, "x-user", "u")
		tpl, err := variables.CompileTemplate(src)
		if err == nil {
			if tpl.String() != src {
				t.Fatalf("String() = %q, want %q", tpl.String(), src)
			}
			out, _ := tpl.RenderComplete(ctx)
			if got := tpl.Render(ctx); got != out {
				t.Fatalf("Render %q != RenderComplete %q for %q", got, out, src)
			}
			if !strings.Contains(src, "$") && out != src {
				t.Fatalf("literal %q rendered as %q", src, out)
			}
		} else if err.Error() == "" {
			t.Fatalf("empty error for %q", src)
		}
		lit, err := variables.CompileTemplate(strings.ReplaceAll(src, "$", "$$"))
		if err != nil {
			t.Fatalf("escaped literal of %q refused: %v", src, err)
		}
		if got := lit.Render(ctx); got != src {
			t.Fatalf("escaped literal of %q rendered as %q", src, got)
		}
	})
}

// cookieOctet: RFC 6265 4.1.1 cookie-octet.
func cookieOctet(c byte) bool {
	return c == 0x21 || (c >= 0x23 && c <= 0x2b) || (c >= 0x2d && c <= 0x3a) || (c >= 0x3c && c <= 0x5b) || (c >= 0x5d && c <= 0x7e)
}

func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}

// wellFormedCookies: every pair is token=cookie-value (RFC 6265 4.2.1), so
// every parser must read it the same way.
func wellFormedCookies(line string) bool {
	for _, kv := range strings.Split(line, ";") {
		kv = strings.TrimLeft(kv, " ")
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !token(k) {
			return false
		}
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		for i := 0; i < len(v); i++ {
			if !cookieOctet(v[i]) {
				return false
			}
		}
	}
	return true
}

// FuzzCookie: variables.Cookie ($cookie_<name>, key-auth's cookie source,
// the cookie matchers) never panics, returns only bytes of the header, and
// on a well-formed Cookie header finds what net/http finds.
func FuzzCookie(f *testing.F) {
	f.Add("a=1; sid=s2", "sid")
	f.Add(`sid="quoted"; sid=second`, "sid")
	f.Add("sid=; a=b", "sid")
	f.Add(" ;;sid==x=;", "sid")
	f.Add("a=1;sid=2", "a")
	f.Fuzz(func(t *testing.T, line, name string) {
		v, ok := variables.Cookie([]string{line}, name)
		if !ok {
			if v != "" {
				t.Fatalf("not found but value %q", v)
			}
		} else if !strings.Contains(line, v) || strings.Contains(v, ";") {
			t.Fatalf("Cookie(%q, %q) = %q: not one value of the header", line, name, v)
		}
		if !wellFormedCookies(line) || !token(name) {
			return
		}
		r := &http.Request{Header: http.Header{"Cookie": {line}}}
		c, err := r.Cookie(name)
		if (err == nil) != ok || (ok && c.Value != v) {
			t.Fatalf("Cookie(%q, %q) = %q, %v; net/http: %v, %v", line, name, v, ok, c, err)
		}
	})
}

// FuzzQueryArg: variables.QueryArg ($arg_<name>, key-auth's query source,
// the query matchers) never panics and, on a query net/url parses, finds
// the first value net/url finds, decoded the same way. (Names given with
// '%' or '+' are compared undecoded first, by design, and the empty name,
// which no $arg_ or source can have, finds an empty pair: not compared.)
func FuzzQueryArg(f *testing.F) {
	f.Add("/p?a=1&b=2&a=3", "a")
	f.Add("/p?api_key=k%20x&x", "api_key")
	f.Add("/p?api%5Fkey=enc&api_key=plain", "api_key")
	f.Add("/p?q=a+b#frag&q=2", "q")
	f.Add("/p?=v&q", "")
	f.Add("/p?q=%zz", "q")
	f.Fuzz(func(t *testing.T, path, name string) {
		v, ok := variables.QueryArg(path, name)
		if !ok && v != "" {
			t.Fatalf("not found but value %q", v)
		}
		if name == "" || strings.ContainsAny(name, "%+") {
			return
		}
		i := strings.IndexByte(path, '?')
		if i < 0 {
			if ok {
				t.Fatalf("QueryArg(%q, %q) found %q without a query", path, name, v)
			}
			return
		}
		q := path[i+1:]
		if j := strings.IndexByte(q, '#'); j >= 0 {
			q = q[:j]
		}
		ref, err := url.ParseQuery(q)
		if err != nil {
			return // net/url refuses it (bad escape, ';'): no reference
		}
		want, found := ref[name]
		if found != ok || (ok && want[0] != v) {
			t.Fatalf("QueryArg(%q, %q) = %q, %v; net/url: %q", path, name, v, ok, want)
		}
	})
}

// FuzzSplitAddress: variables.SplitAddress ($remote_addr, $remote_port)
// never panics, returns parts of its input, and agrees with net.SplitHostPort
// on every "ip:port" / "[ipv6]:port" address.
func FuzzSplitAddress(f *testing.F) {
	for _, s := range []string{"192.0.2.1:5555", "[2001:db8::1]:443", "::1", "[::1]", "[::1]:", "/tmp/sock", "1.2.3.4", "a:b:c", "[x]y:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, a string) {
		ip, port := variables.SplitAddress(a)
		if !strings.Contains(a, ip) || !strings.Contains(a, port) {
			t.Fatalf("SplitAddress(%q) = %q, %q", a, ip, port)
		}
		h, p, err := net.SplitHostPort(a)
		if err != nil || net.ParseIP(h) == nil || p == "" || strings.Contains(h, "%") {
			return
		}
		if ip != h || port != p {
			t.Fatalf("SplitAddress(%q) = %q, %q; net.SplitHostPort: %q, %q", a, ip, port, h, p)
		}
	})
}
