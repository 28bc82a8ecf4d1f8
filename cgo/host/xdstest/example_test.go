package xdstest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// The example of envoy/dynamic/ does what its "# Try:" lines say: v1's key, v2 moved into
// place (key rotated), an invalid v2 rejected while v2 keeps serving. Its files are used as
// they are, with the addresses and paths replaced.
func TestDynamicExample(t *testing.T) {
	root := hosttest.RepoRoot(t)
	dir := t.TempDir()
	lib := hosttest.Require(t, "libgolang.so")
	upstream := hosttest.EchoUpstream(t)
	port := hosttest.FreePort(t)
	r := strings.NewReplacer("out/dynamic/", dir+"/", "out/libgolang.so", lib,
		"port_value: 10000", fmt.Sprintf("port_value: %d", port), "port_value: 8080", fmt.Sprintf("port_value: %d", upstream),
		"port_value: 9901", "port_value: {{.AdminPort}}")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, "envoy/dynamic", name))
		if err != nil {
			t.Fatal(err)
		}
		return r.Replace(string(b))
	}
	f := &files{t: t, dir: dir}
	for _, name := range []string{"lds.yaml", "cds.yaml", "rds.yaml"} {
		f.put(name, read(name), false)
	}
	h := hosttest.Start(t, read("envoy.yaml"), nil)
	base := fmt.Sprintf("http://127.0.0.1:%d/", port)
	c := &http.Client{Timeout: 5 * time.Second}
	waitStat(t, h, "http.dynamic.rds.dynamic_route.update_success", 1, 10*time.Second)
	if code, hdr, _ := get(t, c, base, "x-api-key", "alice-key-v1"); code != 200 || hdr.Get("x-config-version") != "v1" {
		t.Fatalf("v1: status %d, version %q", code, hdr.Get("x-config-version"))
	}
	v2 := read("rds-v2.yaml")
	f.put("rds.yaml", v2, false)
	waitStat(t, h, "http.dynamic.rds.dynamic_route.update_success", 2, 10*time.Second)
	if code, _, _ := get(t, c, base, "x-api-key", "alice-key-v1"); code != http.StatusUnauthorized {
		t.Errorf("v2 with the old key: status %d, want 401", code)
	}
	if code, hdr, _ := get(t, c, base, "x-api-key", "alice-key-v2"); code != 200 || hdr.Get("x-config-version") != "v2" {
		t.Errorf("v2: status %d, version %q", code, hdr.Get("x-config-version"))
	}
	// The README's invalid update: sed 's/rate: 1000/rate: -1/'.
	if !strings.Contains(v2, "rate: 1000") {
		t.Fatalf("rds-v2.yaml has no \"rate: 1000\" for the invalid-update step")
	}
	f.put("rds.yaml", strings.Replace(v2, "rate: 1000", "rate: -1", 1), false)
	waitStat(t, h, "http.dynamic.rds.dynamic_route.update_rejected", 1, 10*time.Second)
	if code, hdr, _ := get(t, c, base, "x-api-key", "alice-key-v2"); code != 200 || hdr.Get("x-config-version") != "v2" {
		t.Errorf("after the rejected update: status %d, version %q (want 200, v2)", code, hdr.Get("x-config-version"))
	}
}
