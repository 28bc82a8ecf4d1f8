package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/validate"
)

// example exercises compile's coverage with a placeholder plugin "x", unknown to the
// registry: tests using it skip the plugin check.
const example = "internal/compile/testdata/envoy.yaml"

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestValidatePrintsOK(t *testing.T) {
	code, out, errs := runCLI("validate", "--skip-library-check", "--skip-plugin-check", example)
	if code != 0 || out != example+": ok (Envoy bootstrap)\n" || errs != "" {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errs)
	}
}

// The flags moectl had before cobra still work: -c FILE and single-dash long flags.
func TestValidateOldFlagSpelling(t *testing.T) {
	code, out, errs := runCLI("validate", "-skip-library-check", "-skip-plugin-check", "-c", example)
	if code != 0 || !strings.HasSuffix(out, ": ok (Envoy bootstrap)\n") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestValidatePrintsEveryProblemWithItsPosition(t *testing.T) {
	src, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(string(src), "codec_type: AUTO", "codec_type: HTTP4\n          use_remote_address: yes", 1)
	y = strings.Replace(y, "port_value: 10000", "port_value: 100000", 1)
	bad := writeFile(t, "bad.yaml", y)
	code, out, errs := runCLI("validate", "--skip-plugin-check", bad)
	if code != 1 || !strings.Contains(out, "2 error(s)") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, want := range []string{
		bad + `:32:11: error: static_resources.listeners[0].filter_chains[0].filters[0].typed_config.codec_type: unknown value "HTTP4"`,
		bad + `:33:11: error: static_resources.listeners[0].filter_chains[0].filters[0].typed_config.use_remote_address: want true or false, got the string "yes"`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks\n%s\ngot:\n%s", want, errs)
		}
	}
	// Decoding failed, so the validation rules wait for the next run; fix the types:
	y = strings.Replace(y, "codec_type: HTTP4\n          use_remote_address: yes", "codec_type: HTTP2", 1)
	bad = writeFile(t, "bad.yaml", y)
	code, _, errs = runCLI("validate", "--skip-plugin-check", bad)
	want := bad + `:24:44: error: static_resources.listeners[0].address.socket_address.port_value: value must be less than or equal to 65535`
	if code != 1 || !strings.Contains(errs, want) {
		t.Errorf("code %d; stderr lacks\n%s\ngot:\n%s", code, want, errs)
	}
}

func TestValidateJSONOutput(t *testing.T) {
	code, out, _ := runCLI("validate", "-o", "json", "--skip-plugin-check", example)
	var rep validate.Report
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Files) != 1 || rep.Files[0].Checked[0] != "Envoy bootstrap" {
		t.Fatalf("code %d, output %s", code, out)
	}
	// The missing library is a warning with its position.
	f := rep.Files[0].Findings
	if len(f) != 1 || f[0].Severity != validate.Warning || f[0].Line != 41 || !strings.HasSuffix(f[0].Path, "library_path") {
		t.Fatalf("findings %+v", f)
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

// moe-host runs `moectl compile -c FILE` and reads standard output; errors go to standard
// error with exit status 1.
func TestCompileAsMoeHostCallsIt(t *testing.T) {
	code, stdout, errs := runCLI("compile", "-c", "../../envoy/envoy.yaml", "--skip-library-check")
	if code != 0 || !strings.HasPrefix(stdout, "{") || errs != "" {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	code, stdout, errs = runCLI("compile", "-c", "testdata/full-featured.yaml", "--skip-library-check")
	if code != 1 || stdout != "" || !strings.Contains(errs, "http_filters[0].typed_config.@type: type type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors is not supported by moe-host") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, errs)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"compile"}, {"frobnicate"}, {"validate"}, {"validate", "--target", "nginx", example},
		{"compile", "-c", example, "extra"}, {"validate", "--nope", example}, {"render"}} {
		if code, _, _ := runCLI(args...); code != 2 {
			t.Errorf("%q: exit code %d, want 2", args, code)
		}
	}
}

func TestHelpAndVersion(t *testing.T) {
	code, out, _ := runCLI("version")
	if code != 0 || !strings.HasPrefix(out, "moectl ") || !strings.Contains(out, "go-control-plane/envoy") {
		t.Fatalf("code %d, out %q", code, out)
	}
	if code, out, _ := runCLI("--version"); code != 0 || !strings.HasPrefix(out, "moectl ") {
		t.Fatalf("--version: code %d, out %q", code, out)
	}
	for _, cmd := range []string{"validate", "compile", "render"} {
		if code, out, _ := runCLI(cmd, "--help"); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%s --help: code %d, out %q", cmd, code, out)
		}
	}
	if code, out, _ := runCLI(); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("no arguments: code %d, out %q", code, out)
	}
}
