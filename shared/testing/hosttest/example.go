package hosttest

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// ExampleOptions tune StartExample.
type ExampleOptions struct {
	// Replace maps more literal text of the example to test values, for example the Redis
	// address "127.0.0.1:6379" or an extra service URL. Each key must occur in the file.
	Replace map[string]string
	// Library is the library the example's library_path names under out/ (default
	// "libgolang.so"): "library_path: out/<Library>" becomes the built library. NoLibrary:
	// the example has no golang filter.
	Library string
	// Host are the options of the host (Options.Library is set from Library).
	Host Options
}

// exampleAddresses are the fixed addresses every example bootstrap uses (the shape of
// envoy/envoy.yaml) and the template fields Start fills in for them.
var exampleAddresses = []string{
	"port_value: 10000", "port_value: {{.Port}}",
	"port_value: 9901", "port_value: {{.AdminPort}}",
	"port_value: 8080", "port_value: {{.UpstreamPort}}",
}

// StartExample runs a documented example bootstrap (path relative to the repository root,
// e.g. "envoy/examples/key-auth.yaml") through moe-host, so the example is what the
// end-to-end test exercises and cannot rot. Its fixed addresses become test ones: listener
// 10000 and admin 9901 free ports, upstream 8080 an echo upstream, and library_path
// out/libgolang.so the built library (ExampleOptions.Library names another one); opts add
// more substitutions and the host's Options. The test fails if the example lacks any text to
// substitute.
func StartExample(t tb.TB, path string, opts ...ExampleOptions) *Host {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(RepoRoot(t), path))
	if err != nil {
		t.Fatalf("example: %v", err)
	}
	if len(opts) > 1 {
		panic("hosttest: at most one ExampleOptions")
	}
	var eo ExampleOptions
	if len(opts) == 1 {
		eo = opts[0]
	}
	if eo.Library == "" {
		eo.Library = "libgolang.so"
	}
	eo.Host.Library = eo.Library
	pairs := append([]string(nil), exampleAddresses...)
	if eo.Library != NoLibrary {
		pairs = append(pairs, "library_path: out/"+eo.Library, "library_path: {{.Library}}")
	}
	keys := make([]string, 0, len(eo.Replace))
	for k := range eo.Replace {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pairs = append(pairs, k, eo.Replace[k])
	}
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(string(raw), pairs[i]) {
			t.Fatalf("example %s has no %q to substitute; keep the shape of envoy/envoy.yaml", path, pairs[i])
		}
	}
	tmpl := strings.NewReplacer(pairs...).Replace(string(raw))
	return Start(t, tmpl, Vars{"UpstreamPort": EchoUpstream(t)}, eo.Host)
}

// RepoRoot is the directory holding go.mod above the test's directory (not derived from
// $MOE_OUT, which may point elsewhere).
func RepoRoot(t tb.TB) string {
	t.Helper()
	dir, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errNoGoMod
		}
		dir = parent
	}
}
