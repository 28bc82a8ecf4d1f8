package authn

import (
	"testing"

	"github.com/moeproxy/moe/shared/variables"
)

func TestQueryParamAndRemoveQueryParam(t *testing.T) {
	for _, tc := range []struct {
		path, name, val string
		found           bool
		removed         string
	}{
		{"/p?a=1&tok=x%2By&b=2", "tok", "x+y", true, "/p?a=1&b=2"},
		{"/p?tok=1", "tok", "1", true, "/p"},
		{"/p?to%6B=v&tok=w", "tok", "v", true, "/p"},
		{"/p?a=1#frag", "tok", "", false, "/p?a=1#frag"},
		{"/p", "tok", "", false, "/p"},
		{"/p?tokx=1", "tok", "", false, "/p?tokx=1"},
	} {
		v, ok := variables.QueryArg(tc.path, tc.name)
		if v != tc.val || ok != tc.found {
			t.Errorf("variables.QueryArg(%q) = %q %v", tc.path, v, ok)
		}
		if got := RemoveQueryParam(tc.path, tc.name); got != tc.removed {
			t.Errorf("RemoveQueryParam(%q) = %q, want %q", tc.path, got, tc.removed)
		}
	}
}

func TestCookieAndRemoveCookie(t *testing.T) {
	if v, ok := variables.Cookie([]string{"a=1", `b=2; jwt="tok"`}, "jwt"); !ok || v != "tok" {
		t.Fatalf("Cookie = %q %v", v, ok)
	}
	if _, ok := variables.Cookie([]string{"jwtx=1"}, "jwt"); ok {
		t.Fatal("prefix matched")
	}
	if got, left := RemoveCookie("a=1; jwt=t; b=2", "jwt"); got != "a=1; b=2" || !left {
		t.Fatalf("RemoveCookie = %q %v", got, left)
	}
	if _, left := RemoveCookie("jwt=t", "jwt"); left {
		t.Fatal("empty line kept")
	}
}

func TestQuoteParam(t *testing.T) {
	if got := QuoteParam("a\"b\\c\r\nd"); got != `"a\"b\\cd"` {
		t.Fatalf("QuoteParam = %s", got)
	}

}
