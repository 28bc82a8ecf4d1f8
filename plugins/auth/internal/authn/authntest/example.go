package authntest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/hosttest"
)

// StartExample runs a bootstrap from envoy/examples through moe-host, so the
// documented example is what the end-to-end test exercises and cannot rot.
// The example's fixed addresses become test ones: listener 10000, admin 9901,
// upstream 8080 (an echo upstream) and library_path out/libgolang.so.
func StartExample(t testing.TB, name string) *hosttest.Host {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "envoy", "examples", name))
	if err != nil {
		t.Fatalf("example: %v", err)
	}
	tmpl := string(raw)
	for old, repl := range map[string]string{
		"port_value: 10000":              "port_value: {{.Port}}",
		"port_value: 9901":               "port_value: {{.AdminPort}}",
		"port_value: 8080":               "port_value: {{.UpstreamPort}}",
		"library_path: out/libgolang.so": "library_path: {{.Library}}",
	} {
		if !strings.Contains(tmpl, old) {
			t.Fatalf("example %s has no %q", name, old)
		}
		tmpl = strings.ReplaceAll(tmpl, old, repl)
	}
	return hosttest.Start(t, tmpl, hosttest.Vars{"UpstreamPort": hosttest.EchoUpstream(t)})
}

// repoRoot is the directory holding go.mod above the test's directory (not
// derived from $MOE_OUT, which may point elsewhere).
func repoRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}
