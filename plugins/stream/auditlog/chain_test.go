package auditlog

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/moeproxy/moe/plugins/auth/keyauth"
	_ "github.com/moeproxy/moe/plugins/limiting/limitreq"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

const keyAuth = `{"name":"key-auth","config":{"sources":["header:x-api-key"],"consumers":[{"name":"alice","group":"admins","keys":["alice-key-2026-a"]}]}}`

// Through the real framework over a fake Envoy: the decisions come from the
// framework (key-auth identifies alice or refuses; limit-req refuses), with no
// code of theirs for the audit.
func TestChainRecordsTheFrameworksDecisions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	r, err := fakeenvoy.NewChain(fmt.Sprintf(`{"plugins":[
		{"name":"audit-log","config":{"sink":{"type":"file","path":%q},"include_headers":["x-api-key","x-tenant"]}},
		%s,
		{"name":"limit-req","config":{"rate":1,"burst":1,"key":"$consumer"}}]}`, path, keyAuth))
	if err != nil {
		t.Fatal(err)
	}
	key := [2]string{"x-api-key", "alice-key-2026-a"}
	for _, tc := range []struct {
		headers [][2]string
		status  int
	}{
		{[][2]string{key, {"x-tenant", "t1"}}, 200},
		{nil, 401},
		{[][2]string{{"x-api-key", "wrong-key-000000"}}, 401},
		{[][2]string{key}, 429},
	} {
		res := r.Do(fakeenvoy.Request{Path: "/orders", RouteName: "orders", Cluster: "echo", Headers: tc.headers})
		if res.Status != tc.status || len(res.Violations) > 0 {
			t.Fatalf("status %d, want %d; violations %v", res.Status, tc.status, res.Violations)
		}
	}
	r.Config().(interface{ Destroy() }).Destroy()
	lines := readLines(t, path)
	if len(lines) != 4 {
		t.Fatalf("records %q", lines)
	}
	ok, missing, wrong, limited := decode(t, lines[0]), decode(t, lines[1]), decode(t, lines[2]), decode(t, lines[3])
	if ok.WhoRaw["consumer"] != "alice" || ok.WhoRaw["consumer_group"] != "admins" || ok.Decision["allowed"] != true ||
		ok.Decision["by"] != "key-auth" || ok.Decision["reason"] != "consumer alice" || ok.Status != 200 ||
		ok.Headers["x-api-key"] != "***" || ok.Headers["x-tenant"] != "t1" || ok.What["route"] != "orders" {
		t.Errorf("allowed: %s", lines[0])
	}
	if missing.Decision["allowed"] != false || missing.Decision["by"] != "key-auth" || missing.Status != 401 || missing.WhoRaw["consumer"] != "" {
		t.Errorf("missing key: %s", lines[1])
	}
	if wrong.Decision["by"] != "key-auth" || !strings.Contains(fmt.Sprint(wrong.Decision["reason"]), "invalid") || strings.Contains(lines[2], "wrong-key") {
		t.Errorf("wrong key: %s", lines[2])
	}
	if limited.Decision["allowed"] != false || limited.Decision["by"] != "limit-req" || limited.Decision["status"] != float64(429) ||
		len(limited.Decisions) != 2 || limited.WhoRaw["consumer"] != "alice" {
		t.Errorf("limited: %s", lines[3])
	}
}

// BenchmarkChain: a whole request through the moe filter manager on the fake
// Envoy, against the empty chain measured in the same run; key-auth
// identifies the consumer in both chains that have it, so the audit's own
// cost is the difference between the last two.
func BenchmarkChain(b *testing.B) {
	key := [2]string{"x-api-key", "alice-key-2026-a"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), key)
	})
	b.Run("key-auth", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[`+keyAuth+`]}`), key)
	})
	b.Run("audit-log-file+key-auth", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "audit.log")
		cfg := fakeenvoy.MustParseChain(b, fmt.Sprintf(`{"plugins":[{"name":"audit-log","config":{"sink":{"type":"file","path":%q},"queue_size":65536,"include_headers":["x-api-key","user-agent"]}},%s]}`, path, keyAuth))
		b.Cleanup(func() { cfg.(interface{ Destroy() }).Destroy() })
		fakeenvoy.BenchChain(b, cfg, key)
	})
}
