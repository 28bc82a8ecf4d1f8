package match_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// FuzzMatch: any JSON is compiled as a matcher (path, methods, headers,
// query, cookies, vars, CEL) or refused with an error naming a field; what
// compiles matches a request (whose path, header and cookie are fuzzed too)
// without panicking, and its config form (MarshalJSON) compiles back to a
// matcher with the same answer.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{
		`{"path":{"prefix":"/api/"},"methods":["GET","HEAD"]}`,
		`{"headers":[{"name":"x-canary","exact":"1"},{"name":"x-debug","present":false}]}`,
		`{"query":[{"name":"tenant","regex":"^t-[0-9]+$"}],"cookies":[{"name":"beta","exact":"yes"}]}`,
		`{"vars":[{"name":"$consumer","prefix":"partner-"}],"cel":"source.ip.startsWith(\"10.\")"}`,
		`{"path":{"regex":"^/a/.*","ignore_case":true},"headers":[{"name":"X-A","suffix":"z","invert":true}]}`,
		`{"path":{"exact":""}}`,
		`{}`,
	} {
		f.Add(s, "/api/v1?tenant=t-1", "1", "beta=yes")
	}
	f.Fuzz(func(t *testing.T, js, path, header, cookie string) {
		if len(js) > 4096 {
			t.Skip()
		}
		m, err := match.Compile(js)
		if err != nil {
			var fe *api.FieldError
			var se *json.SyntaxError
			var te *json.UnmarshalTypeError
			if errors.As(err, &fe) && fe.Reason == "" {
				t.Fatalf("%q: error without a reason: %v", js, err)
			}
			if !errors.As(err, &fe) && !errors.As(err, &se) && !errors.As(err, &te) {
				t.Fatalf("%q: error %T is neither a field error nor a JSON error: %v", js, err, err)
			}
			return
		}
		req := fakeframework.NewRequest("GET", path, "x-canary", header, "x-a", header, "cookie", cookie)
		c := fakeframework.NewContext("fuzz", req).From("10.0.0.1:1")
		got := m.Matches(c, req)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("%q: MarshalJSON: %v", js, err)
		}
		m2, err := match.Compile(string(b))
		if err != nil {
			t.Fatalf("%q: its config form %s does not compile: %v", js, b, err)
		}
		if again := m2.Matches(c, req); again != got {
			t.Fatalf("%q matches %v, its config form %s matches %v", js, got, b, again)
		}
	})
}
