package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
)

// example exercises compile's coverage with a placeholder plugin "x", unknown to the
// registry: tests using it skip the plugin check.
const example = "internal/compile/testdata/envoy.yaml"

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidatePrintsOK(t *testing.T) {
	code, out, errs := runCLI("validate", "-skip-library-check", "-skip-plugin-check", "-c", example)
	if code != 0 || out != "ok\n" {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestValidatePrintsEveryProblem(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	src, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(string(src), "codec_type: AUTO", "codec_type: HTTP2\n          use_remote_address: true", 1)
	if err := os.WriteFile(bad, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI("validate", "-skip-plugin-check", "-c", bad)
	if code != 1 || out != "" {
		t.Fatalf("code %d, stdout %q", code, out)
	}
	for _, want := range []string{"3 error(s)", "typed_config.codec_type: HTTP2", "typed_config.use_remote_address: not supported", "library_path: library /abs/out/libgolang.so does not exist"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestCompileWritesJSONToFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	code, stdout, errs := runCLI("compile", "-skip-library-check", "-skip-plugin-check", "-c", example, "-o", out)
	if code != 0 || stdout != "" {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, errs)
	}
	js, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var bs bootstrap.Bootstrap
	if err := json.Unmarshal(js, &bs); err != nil || len(bs.Listeners) != 1 || len(bs.Clusters) != 2 {
		t.Fatalf("output %s: err %v", js, err)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"compile"}, {"frobnicate"}, {"validate", "-c", example, "extra"}} {
		if code, _, _ := runCLI(args...); code != 2 {
			t.Errorf("%q: exit code %d, want 2", args, code)
		}
	}
}

func TestVersionNamesTheMoectlBinary(t *testing.T) {
	code, out, _ := runCLI("version")
	if code != 0 || !strings.HasPrefix(out, "moectl ") {
		t.Fatalf("code %d, out %q", code, out)
	}
}
