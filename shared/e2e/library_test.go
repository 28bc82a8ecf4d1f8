package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// The test plugins live in out/libmoe-e2e.so only (and the conformance plugins in
// out/libconformance.so): the shipped library, built from ./cgo/libgolang, holds the plugins and
// the framework, never a test plugin or harness.
func TestShippedLibraryHasNoTestCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/moeproxy/moe/cgo/libgolang").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	ours := 0
	for _, p := range deps {
		if !strings.HasPrefix(p, "github.com/moeproxy/moe/") {
			continue
		}
		ours++
		for _, bad := range []string{"/testing/", "/e2e/", "/conformance/", "/testplugins/", "/redistest/"} {
			if strings.Contains(p+"/", bad) {
				t.Errorf("out/libgolang.so would contain the test package %s", p)
			}
		}
	}
	if ours < 20 || !strings.Contains(string(out), "github.com/moeproxy/moe/plugins/all\n") {
		t.Fatalf("go list -deps ./cgo/libgolang: %d of our packages, no plugins/all?\n%s", ours, out)
	}
	// And the e2e library does carry them next to the shipped plugins.
	out, err = exec.Command("go", "list", "-deps", "github.com/moeproxy/moe/shared/e2e/so").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, want := range []string{"github.com/moeproxy/moe/shared/e2e/testplugins\n", "github.com/moeproxy/moe/plugins/all\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("out/libmoe-e2e.so lacks %s", strings.TrimSpace(want))
		}
	}
}
