package accesslog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// logOnce runs one request's log hook through a config writing to a fresh
// file, destroys the config (which flushes) and returns the file.
func logOnce(t *testing.T, config string, ctx *fakeframework.Context) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "access.log")
	c, env := fakeframework.MustParse[*Config](t, Name, newConfig, strings.Replace(config, "{", fmt.Sprintf(`{"path": %q, `, path), 1))
	(*filter)(c).Log(ctx, ctx.Req, ctx.Resp, ctx.Receiver().RequestInfo())
	c.Destroy()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if env.Count("dropped") != 0 || env.Count("write_failed") != 0 {
		t.Fatalf("metrics %v", env.Values())
	}
	return string(b)
}

func request() *fakeframework.Context {
	req := fakeframework.NewRequest("GET", "/orders?id=7", "user-agent", "curl/8", "x-user", "bob")
	ctx := fakeframework.NewContext(Name, req).From("192.0.2.10:5555").WithResponse(fakeframework.NewResponse(201))
	ctx.RouteName, ctx.Cluster = "orders", "upstream"
	ctx.SetConsumer(&api.Consumer{Name: "alice"})
	return ctx
}

func TestLinesFollowTheFormat(t *testing.T) {
	for _, tc := range []struct{ name, config, want string }{
		{"text", `{"format": "$remote_addr $method $request_uri $status $consumer $route_name"}`, "192.0.2.10 GET /orders?id=7 201 alice orders\n"},
		{"literal dollars and braces", `{"format": "cost=$$1 ${header_x-user}!"}`, "cost=$1 bob!\n"},
		{"absent variables are empty", `{"format": "[$header_nope]"}`, "[]\n"},
		{"json in name order", `{"json": {"status": "$status", "path": "$path", "who": "$consumer"}}`, `{"path":"/orders","status":"201","who":"alice"}` + "\n"},
		{"default format", `{"queue_size": 10}`, `192.0.2.10 - alice [] "GET /orders?id=7 HTTP/1.1" 201 0 "" "curl/8" test-request` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := logOnce(t, tc.config, request()); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestValuesCannotBreakALine(t *testing.T) {
	ctx := request()
	ctx.Req.Set("x-evil", "a\nfake line\r\x00")
	if got := logOnce(t, `{"format": "$header_x-evil"}`, ctx); got != `a\x0afake line\x0d\x00`+"\n" {
		t.Fatalf("text: %q", got)
	}
	got := logOnce(t, `{"json": {"v": "$header_x-evil"}}`, ctx)
	var m map[string]string
	if err := json.Unmarshal([]byte(got), &m); err != nil || m["v"] != "a\nfake line\r\x00" || strings.Count(got, "\n") != 1 {
		t.Fatalf("json: %q (%v)", got, err)
	}
}

func TestMatchSelectsTheRequestsLogged(t *testing.T) {
	cfg := `{"format": "$path", "match": {"path": {"prefix": "/orders"}}}`
	if got := logOnce(t, cfg, request()); got != "/orders\n" {
		t.Fatalf("matching request: %q", got)
	}
	ctx := request()
	ctx.Req.Set(":path", "/health")
	if got := logOnce(t, cfg, ctx); got != "" {
		t.Fatalf("other request logged: %q", got)
	}
}

func TestDestroyFlushesEveryQueuedLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	c, env := fakeframework.MustParse[*Config](t, Name, newConfig, fmt.Sprintf(`{"path": %q, "format": "$arg_i", "queue_size": 5000}`, path))
	for i := 0; i < 3000; i++ {
		ctx := fakeframework.NewContext(Name, fakeframework.NewRequest("GET", fmt.Sprintf("/?i=%d", i)))
		(*filter)(c).Log(ctx, ctx.Req, nil, nil)
	}
	c.Destroy()
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3000 || lines[0] != "0" || lines[2999] != "2999" || env.Count("lines") != 3000 {
		t.Fatalf("%d lines (first %q), lines metric %d, %v", len(lines), lines[0], env.Count("lines"), env.Values())
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	for _, tc := range []struct{ config, field, reason string }{
		{`{"format": "$x", "path": "stdout"}`, "format", "unknown variable $x"},
		{`{"format": "$path", "json": {"p": "$path"}}`, "json", "cannot be set together with format"},
		{`{"json": {}}`, "json", "at least one field"},
		{`{"json": {"p": "$nope"}}`, "json.p", "unknown variable"},
		{`{"path": "logs/a.log"}`, "path", "absolute file path"},
		{`{"path": ""}`, "path", "is required"},
		{fmt.Sprintf(`{"path": %q}`, filepath.Join(dir, "f", "a.log")), "path", "not a directory"},
		{`{"queue_size": 0}`, "queue_size", "between 1 and"},
		{`{"rotation": {"max_size_mb": 0}}`, "rotation.max_size_mb", "between 1 and"},
		{`{"rotation": {"max_backups": -1}}`, "rotation.max_backups", "between 0 and"},
		{`{"flush_timeout": "0s"}`, "flush_timeout", "greater than 0"},
		{`{"match": {"path": {"regex": "("}}}`, "match.path", "regex"},
		{`{"fromat": "x"}`, "fromat", "unknown field"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
			fakeframework.WantCheckError(t, Name, tc.config, tc.field, tc.reason) // moectl validate
		})
	}
}
