package main

import (
	"os/exec"
	"strings"
	"testing"
)

// vs-htnn.sh needs a checkout of mosn/htnn to run, so make test only checks
// that it parses and refuses to start without one.
func TestVsHTNNScriptParsesAndNeedsACheckout(t *testing.T) {
	if out, err := exec.Command("bash", "-n", "vs-htnn.sh").CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	out, err := exec.Command("bash", "vs-htnn.sh").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "usage:") {
		t.Errorf("without arguments: err %v, output %q; want a usage error", err, out)
	}
}
