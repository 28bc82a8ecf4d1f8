package auditlog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// Checked only (moectl validate), a file sink is neither created nor opened, an http sink
// builds no client, and no queue writer starts; for real, the writer starts.
func TestCheckOnlyCreatesNothing(t *testing.T) {
	js, path := fileConfig(t, "")
	ln := fakeframework.NewListener(t)
	for _, cfg := range []string{js, httpConfig("http://"+ln.Addr()+"/audit", "")} {
		var c *Config
		fakeframework.StartsNoGoroutine(t, func() {
			var err error
			if c, _, err = fakeframework.Check[*Config](t, Name, newConfig, cfg, false); err != nil {
				t.Fatal(err)
			}
		})
		if c.out != nil || c.http != nil || c.queue != nil {
			t.Errorf("%s: output %v, http sink %v, queue %v", cfg, c.out, c.http, c.queue)
		}
		c.Destroy()
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
		t.Fatalf("the check created %v", entries)
	}
	ln.WantNoConnection(t, 0)
	fakeframework.StartsGoroutine(t, func() {
		c, _, err := fakeframework.Parse[*Config](t, Name, newConfig, js, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Destroy)
	})
}
