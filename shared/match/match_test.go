package match_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func req(method, path string, kv ...string) (*fakeframework.Context, *fakeframework.Request) {
	r := fakeframework.NewRequest(method, path, kv...)
	c := fakeframework.NewContext("p", r).From("10.1.2.3:4000")
	c.RouteName = "api"
	return c, r
}

func TestMatchesEveryPartThatIsSet(t *testing.T) {
	for _, tc := range []struct {
		name, match  string
		method, path string
		kv           []string
		want         bool
	}{
		{"empty matches all", `{}`, "GET", "/", nil, true},
		{"path prefix", `{"path": {"prefix": "/api/"}}`, "GET", "/api/x?y=1", nil, true},
		{"path prefix ignores the query", `{"path": {"prefix": "/api/"}}`, "GET", "/x?/api/", nil, false},
		{"path exact", `{"path": {"exact": "/api"}}`, "GET", "/api?x", nil, true},
		{"path exact empty string", `{"path": {"exact": ""}}`, "GET", "/api", nil, false},
		{"path regex", `{"path": {"regex": "^/v[0-9]+/"}}`, "GET", "/v2/users", nil, true},
		{"path suffix ignore case", `{"path": {"suffix": ".JSON", "ignore_case": true}}`, "GET", "/a/b.json", nil, true},
		{"method", `{"methods": ["GET", "HEAD"]}`, "POST", "/", nil, false},
		{"header exact", `{"headers": [{"name": "X-Canary", "exact": "1"}]}`, "GET", "/", []string{"x-canary", "1"}, true},
		{"header any value", `{"headers": [{"name": "x-tag", "exact": "b"}]}`, "GET", "/", []string{"x-tag", "a", "x-tag", "b"}, true},
		{"header present", `{"headers": [{"name": "x-debug"}]}`, "GET", "/", nil, false},
		{"header absent", `{"headers": [{"name": "x-debug", "present": false}]}`, "GET", "/", nil, true},
		{"header invert", `{"headers": [{"name": "x-env", "exact": "prod", "invert": true}]}`, "GET", "/", []string{"x-env", "dev"}, true},
		{"header invert, absent", `{"headers": [{"name": "x-env", "exact": "prod", "invert": true}]}`, "GET", "/", nil, true},
		{"query", `{"query": [{"name": "tenant", "regex": "^t-[0-9]+$"}]}`, "GET", "/?tenant=t-42", nil, true},
		{"query encoded", `{"query": [{"name": "q", "exact": "a b"}]}`, "GET", "/?q=a%20b", nil, true},
		{"cookie", `{"cookies": [{"name": "beta", "exact": "yes"}]}`, "GET", "/", []string{"cookie", "a=1; beta=yes"}, true},
		{"cookie missing", `{"cookies": [{"name": "beta", "exact": "yes"}]}`, "GET", "/", nil, false},
		{"var", `{"vars": [{"name": "$route_name", "exact": "api"}]}`, "GET", "/", nil, true},
		{"var without $", `{"vars": [{"name": "remote_addr", "prefix": "10."}]}`, "GET", "/", nil, true},
		{"cel", `{"cel": "source.ip.startsWith('10.') && request.method == 'GET'"}`, "GET", "/", nil, true},
		{"cel error is no match", `{"cel": "request.headers['x-absent'] == '1'"}`, "GET", "/", nil, false},
		{"all parts", `{"path": {"prefix": "/api"}, "methods": ["GET"], "headers": [{"name": "x-a", "exact": "1"}], "cel": "true"}`, "GET", "/api", []string{"x-a", "1"}, true},
		{"one part fails", `{"path": {"prefix": "/api"}, "methods": ["GET"], "headers": [{"name": "x-a", "exact": "1"}]}`, "GET", "/api", []string{"x-a", "2"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := match.Compile(tc.match)
			if err != nil {
				t.Fatal(err)
			}
			c, r := req(tc.method, tc.path, tc.kv...)
			if got := m.Matches(c, r); got != tc.want {
				t.Fatalf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestConfigErrorsNameTheFieldInsideTheMatch(t *testing.T) {
	for _, tc := range []struct{ match, want string }{
		{`{"pth": {}}`, "pth: unknown field"},
		{`{"path": {}}`, "path: give one of exact, prefix"},
		{`{"path": {"prefix": "/a", "regex": "b"}}`, "path: give only one of"},
		{`{"headers": [{"name": "x", "regex": "("}]}`, "headers[0]: regex: error parsing regexp"},
		{`{"headers": [{"exact": "1"}]}`, "headers[0].name: is required"},
		{`{"headers": [{"name": "x", "exact": "1", "present": true}]}`, "headers[0].present: give either present or a string match"},
		{`{"methods": ["get"]}`, `methods[0]: "get" is not an upper-case method name`},
		{`{"vars": [{"name": "$nope", "exact": "1"}]}`, "vars[0].name: unknown variable $nope"},
		{`{"cel": "nope"}`, "undeclared reference to 'nope'"},
	} {
		t.Run(tc.match, func(t *testing.T) {
			_, err := match.Compile(tc.match)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

type rule struct {
	Match *match.Match `json:"match"`
}

func TestAsAConfigField(t *testing.T) {
	var r rule
	if err := json.Unmarshal([]byte(`{"match": {"methods": ["GET"]}}`), &r); err != nil {
		t.Fatal(err)
	}
	c, h := req("GET", "/")
	if !r.Match.Matches(c, h) {
		t.Fatal("no match")
	}
	var nilMatch *match.Match
	if !nilMatch.Matches(c, h) || !nilMatch.IsEmpty() {
		t.Fatal("a nil match must match everything")
	}
	b, _ := json.Marshal(r)
	if !strings.Contains(string(b), `"methods":["GET"]`) {
		t.Fatalf("marshal %s", b)
	}
	var _ api.HeaderMap = h
}

func BenchmarkMatches(b *testing.B) {
	for _, tc := range []struct{ name, match string }{
		{"prefix", `{"path": {"prefix": "/api/"}}`},
		{"prefix+method+header", `{"path": {"prefix": "/api/"}, "methods": ["GET"], "headers": [{"name": "x-canary", "exact": "1"}]}`},
		{"regex", `{"path": {"regex": "^/api/v[0-9]+/"}}`},
		{"cookie+query", `{"cookies": [{"name": "beta", "exact": "yes"}], "query": [{"name": "t", "exact": "1"}]}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m, err := match.Compile(tc.match)
			if err != nil {
				b.Fatal(err)
			}
			c, r := req("GET", "/api/v2/x?t=1", "x-canary", "1", "cookie", "a=1; beta=yes")
			b.ReportAllocs()
			for b.Loop() {
				if !m.Matches(c, r) {
					b.Fatal("no match")
				}
			}
		})
	}
}
