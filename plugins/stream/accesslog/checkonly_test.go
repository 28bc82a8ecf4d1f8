package accesslog

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// Checked only (moectl validate), a file output is neither created nor opened, its
// directories are not made and no queue writer starts; for real, all of that happens.
func TestCheckOnlyCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "logs", "access.log")
	js := fmt.Sprintf(`{"path": %q}`, path)
	var c *Config
	fakeframework.StartsNoGoroutine(t, func() {
		var err error
		if c, _, err = fakeframework.Check[*Config](t, Name, newConfig, js, false); err != nil {
			t.Fatal(err)
		}
	})
	c.Destroy()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the check created %v", entries)
	}
	fakeframework.StartsGoroutine(t, func() { parse(t, js) })
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the real Init did not create the file: %v", err)
	}
}
