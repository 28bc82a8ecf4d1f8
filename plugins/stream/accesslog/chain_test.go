package accesslog_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/moeproxy/moe/plugins/template"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

func destroy(cfg any) { cfg.(interface{ Destroy() }).Destroy() }

// Through the real framework over a fake Envoy: a passed request and a local
// reply of another plugin are both logged once, with the final status, and
// destroying the config flushes the lines to the file.
func TestChainLogsEveryRequestOnceWithItsOutcome(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	r, err := fakeenvoy.NewChain(fmt.Sprintf(`{"plugins":[
		{"name":"access-log","config":{"path":%q,"json":{"status":"$status","uri":"$request_uri","route":"$route_name","details":"$response_code_details"}}},
		{"name":"template","config":{"require_header":"x-tenant"}}]}`, path))
	if err != nil {
		t.Fatal(err)
	}
	res := r.Do(fakeenvoy.Request{Path: "/a?x=1", RouteName: "r1", Headers: [][2]string{{"x-tenant", "t"}},
		Properties: map[string]string{"response.code_details": "via_upstream"}})
	if res.Status != 200 || len(res.Violations) > 0 {
		t.Fatalf("passed: %d %v", res.Status, res.Violations)
	}
	res = r.Do(fakeenvoy.Request{Path: "/b", RouteName: "r1"})
	if res.Status != 400 || len(res.Violations) > 0 {
		t.Fatalf("refused: %d %v", res.Status, res.Violations)
	}
	destroy(r.Config())
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines: %q", b)
	}
	var first, second map[string]string
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if first["status"] != "200" || first["uri"] != "/a?x=1" || first["route"] != "r1" || first["details"] != "via_upstream" {
		t.Fatalf("first line %s", lines[0])
	}
	if second["status"] != "400" || second["uri"] != "/b" {
		t.Fatalf("second line %s", lines[1])
	}
}

// BenchmarkChain: a whole request through the moe filter manager on the fake
// Envoy, against the empty chain measured in the same run. The line goes to a
// file in the test's temporary directory (written by the queue's goroutine,
// which shares the machine's cores with the benchmark).
func BenchmarkChain(b *testing.B) {
	ua := [2]string{"user-agent", "bench/1"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), ua)
	})
	for _, tc := range []struct{ name, config string }{
		{"access-log-default-text", `{"queue_size":65536}`},
		{"access-log-json-6-fields", `{"queue_size":65536,"json":{"addr":"$remote_addr","method":"$method","uri":"$request_uri","status":"$status","route":"$route_name","ua":"$header_user-agent"}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "access.log")
			cfg := fakeenvoy.MustParseChain(b, fmt.Sprintf(`{"plugins":[{"name":"access-log","config":%s}]}`,
				strings.Replace(tc.config, "{", fmt.Sprintf(`{"path":%q,`, path), 1)))
			b.Cleanup(func() { destroy(cfg) })
			fakeenvoy.BenchChain(b, cfg, ua)
		})
	}
}
