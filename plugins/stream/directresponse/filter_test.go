package directresponse

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestFirstMatchingRuleAnswers(t *testing.T) {
	c, env := parse(t, `{"rules": [
		{"name": "health", "match": {"path": {"exact": "/healthz"}, "methods": ["GET", "HEAD"]}, "body": "ok\n"},
		{"name": "mock", "match": {"path": {"prefix": "/api/users/"}, "headers": [{"name": "x-mock", "exact": "1"}]},
		 "status": 201, "headers": {"Content-Type": "application/json", "x-mock": "yes"}, "body": "{\"id\": 7}"},
		{"name": "teapot", "match": {"cel": "request.query_params['brew'] == 'tea'"}, "status": 418},
		{"name": "catch-all", "match": {"path": {"prefix": "/old/"}}, "status": 410, "body": "gone"}]}`)
	for _, tc := range []struct {
		name    string
		req     *fakeframework.Request
		status  int
		body    string
		headers map[string]string
	}{
		{"health", fakeframework.NewRequest("GET", "/healthz"), 200, "ok\n", nil},
		{"health is exact", fakeframework.NewRequest("GET", "/healthz/x"), 0, "", nil},
		{"health: method", fakeframework.NewRequest("POST", "/healthz"), 0, "", nil},
		{"mock", fakeframework.NewRequest("GET", "/api/users/7", "x-mock", "1"), 201, `{"id": 7}`,
			map[string]string{"content-type": "application/json", "x-mock": "yes"}},
		{"mock needs its header", fakeframework.NewRequest("GET", "/api/users/7"), 0, "", nil},
		{"cel", fakeframework.NewRequest("GET", "/anything?brew=tea"), 418, "", nil},
		{"later rule", fakeframework.NewRequest("GET", "/old/page"), 410, "gone", nil},
		{"no rule", fakeframework.NewRequest("GET", "/other"), 0, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, st := fakeframework.Run(Name, (*filter)(c), tc.req, nil)
			if tc.status == 0 {
				if st != api.Continue || ctx.Replied != nil {
					t.Fatalf("status %v reply %+v", st, ctx.Replied)
				}
				return
			}
			if st != api.Stop || ctx.Replied.Code != tc.status || ctx.Replied.Body != tc.body {
				t.Fatalf("status %v reply %+v", st, ctx.Replied)
			}
			for k, v := range tc.headers {
				if got := ctx.Replied.Header(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
	if got := env.Count("responses"); got != 4 {
		t.Errorf("responses = %d, want 4", got)
	}
}

func TestBodyFileIsReadAtLoad(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "maintenance.html")
	if err := os.WriteFile(page, []byte("<h1>back soon</h1>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string]any{"rules": []any{map[string]any{
		"status": 503, "body_file": page, "headers": map[string]string{"content-type": "text/html", "retry-after": "120"}}}})
	c, _ := parse(t, string(js))
	// Changing or removing the file later changes nothing: it was read once.
	os.Remove(page)
	ctx, st := fakeframework.Run(Name, (*filter)(c), fakeframework.NewRequest("GET", "/any"), nil)
	if st != api.Stop || ctx.Replied.Code != 503 || ctx.Replied.Body != "<h1>back soon</h1>\n" || ctx.Replied.Header("retry-after") != "120" {
		t.Fatalf("reply %+v", ctx.Replied)
	}
}

func TestBodyFileErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	os.WriteFile(big, []byte(strings.Repeat("x", maxBody+1)), 0o644)
	for _, tc := range []struct{ path, reason string }{
		{filepath.Join(dir, "missing.html"), "no such file"},
		{dir, "not a regular file"},
		{big, "larger than 1048576 bytes"},
	} {
		js, _ := json.Marshal(map[string]any{"rules": []any{map[string]any{"match": map[string]any{"path": map[string]any{"exact": "/a"}}}, map[string]any{"body_file": tc.path}}})
		fakeframework.WantConfigError(t, Name, string(js), "rules[1].body_file", tc.reason)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "rules", "give at least one rule"},
		{`{"rules": [{"status": 99}]}`, "rules[0].status", "between 200 and 599"},
		{`{"rules": [{"status": 600}]}`, "rules[0].status", "between 200 and 599"},
		{`{"rules": [{"body": "a", "body_file": "/x"}]}`, "rules[0].body_file", "not both"},
		{`{"rules": [{"status": 204, "body": "a"}]}`, "rules[0].body", "a 204 answer has no body"},
		{`{"rules": [{"headers": {"x y": "1"}}]}`, "rules[0].headers.x y", "not a valid header name"},
		{`{"rules": [{"headers": {"x-a": "1\nx-b: 2"}}]}`, "rules[0].headers.x-a", "CR, LF or NUL"},
		{`{"rules": [{"headers": {"Content-Length": "5"}}]}`, "rules[0].headers.Content-Length", "set by the proxy"},
		{`{"rules": [{"name": "a"}, {"name": "a"}]}`, "rules[1].name", "used by an earlier rule"},
		{`{"rules": [{"match": {"path": {"exact": "/a", "prefix": "/b"}}}]}`, "rules[0].match.path", "only one of"},
		{`{"rules": [{"match": {"cel": "request.method"}}]}`, "rules[0].match.cel", "want bool"},
		{`{"rules": [{"code": 200}]}`, "rules[0].code", "unknown field"},
	} {
		t.Run(tc.field+"/"+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
	big, _ := json.Marshal(map[string]any{"rules": []any{map[string]any{"body": strings.Repeat("x", maxBody+1)}}})
	fakeframework.WantConfigError(t, Name, string(big), "rules[0].body", "at most 1048576 bytes")
}

// BenchmarkAnswer: the plugin answering a health check (the filter alone,
// with the fake framework: fakeenvoy's bench driver handles no local
// replies); BenchmarkChain in chain_test.go has the requests it lets through.
func BenchmarkAnswer(b *testing.B) {
	c, _ := parse(b, `{"rules":[{"match":{"path":{"prefix":"/mock/"}},"body":"{}"},{"match":{"path":{"exact":"/healthz"}},"body":"ok\n"}]}`)
	fakeframework.Bench(b, Name, (*filter)(c), fakeframework.NewRequest("GET", "/healthz"), api.Stop)
}
