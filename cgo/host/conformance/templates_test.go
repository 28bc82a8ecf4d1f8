package conformance

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
)

// TestTemplatesCompile renders every testdata/*.yaml.tmpl and runs it through `moectl compile`,
// so a bootstrap the host would refuse is reported on its own, naming the YAML path. (logstart
// fails at the time of writing: HOST GAP G1 in README.md.)
func TestTemplatesCompile(t *testing.T) {
	b := findBinaries(t)
	tmpls, _ := filepath.Glob(filepath.Join("testdata", "*.yaml.tmpl"))
	if len(tmpls) == 0 {
		t.Fatal("no templates")
	}
	for _, p := range tmpls {
		name := strings.TrimSuffix(filepath.Base(p), ".yaml.tmpl")
		t.Run(name, func(t *testing.T) {
			ports := map[string]int{}
			// The main listeners, the hardening and normalize templates' and those of the
			// templates that have more (headers).
			listeners := append(append(append([]string{}, mainListeners...), hardeningListeners...), normalizeListeners...)
			for _, l := range append(listeners, "specific") {
				if _, ok := ports[l]; !ok {
					ports[l] = 20000 + len(ports)
				}
			}
			dir := t.TempDir()
			data := map[string]any{"Library": b.lib, "AdminPort": 19999, "Ports": ports, "A1": 18001, "A2": 18002, "B": 18003,
				"Dead": 18004, "Raw": 18005, "Stall": 18006, "Up": 18007,
				// Access log files (accesslog, retry); compile only checks the paths.
				"TextLog": filepath.Join(dir, "text.log"), "JSONLog": filepath.Join(dir, "json.log"),
				"FilteredLog": filepath.Join(dir, "filtered.log"), "Log": filepath.Join(dir, "access.log")}
			tmpl, err := template.New(filepath.Base(p)).Option("missingkey=error").ParseFiles(p)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := tmpl.Execute(&out, data); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(t.TempDir(), name+".yaml")
			if err := os.WriteFile(cfg, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(b.moectl, "compile", "-c", cfg)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("moectl compile %s: %v\n%s", name, err, stderr.String())
			}
			var js map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &js); err != nil {
				t.Fatalf("moectl output is not JSON: %v", err)
			}
		})
	}
}
