package conformance

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// TestConfigRejected: a plugin config the plugin's Parse rejects (NewHttpPluginConfig returns 0)
// makes Envoy reject the filter config (contrib/golang/filters/http/source/config.cc), so the host
// must not start: non-zero exit, the plugin's error in the log.
func TestConfigRejected(t *testing.T) {
	b := findBinaries(t)
	tmpl, err := template.New("rejected.yaml.tmpl").Option("missingkey=error").ParseFiles(filepath.Join("testdata", "rejected.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, map[string]any{"Lib": b.lib, "AdminPort": freePort(t), "Ports": map[string]int{"main": freePort(t)}, "A1": freePort(t)}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "rejected.yaml")
	if err := os.WriteFile(cfg, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(b.host, "-c", cfg, "--concurrency", "2", "-l", "info")
	cmd.Env = append(os.Environ(), "MOE_MOECTL="+b.moectl, hosttest.LoopbackOnlyEnv)
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("moe-host exited 0 with a rejected plugin config; output:\n%s", logs.String())
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("moe-host kept running with a rejected plugin config; output:\n%s", tail(logs.String(), 4000))
	}
	if o := logs.String(); !strings.Contains(o, "config asked to be rejected") {
		t.Errorf("the plugin's Parse error is not in the output:\n%s", tail(o, 4000))
	}
	hosttest.CheckGuard(t, "", logs.String())
	for _, m := range sanitizerMarkers {
		if strings.Contains(logs.String(), m) {
			t.Errorf("output contains %q:\n%s", m, tail(logs.String(), 4000))
		}
	}
}
