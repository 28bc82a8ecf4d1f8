package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// TestConfigRejected: a plugin config the plugin's Parse rejects (NewHttpPluginConfig returns 0)
// makes Envoy reject the filter config (contrib/golang/filters/http/source/config.cc), so the host
// must not start: non-zero exit, the plugin's error in the log.
func TestConfigRejected(t *testing.T) {
	findBinaries(t)
	raw, err := os.ReadFile(filepath.Join("testdata", "rejected.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	out := hosttest.StartExpectFailure(t, string(raw), hosttest.Vars{"A1": freePort(t)}, hosttest.Options{
		Library:      "libconformance.so",
		Listeners:    []string{"main"},
		ConfigName:   "rejected.yaml",
		StartTimeout: 15 * time.Second,
	})
	if !strings.Contains(out, "config asked to be rejected") {
		t.Errorf("the plugin's Parse error is not in the output:\n%s", tail(out, 4000))
	}
}
