package hosttest

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeRepo is a directory with a Makefile whose out/<name> rules log their start and end
// around a short sleep, so overlapping builds show in the log.
func fakeRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mk := "out/%:\n\t@echo start $* >> log\n\t@sleep 0.2\n\t@touch $@\n\t@echo end $* >> log\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBuildsAreSerializedAndIgnoreTheParentMake(t *testing.T) {
	dir := fakeRepo(t)
	// A parent make's -n would turn the build into a dry run if it leaked through.
	t.Setenv("MAKEFLAGS", "-n")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, name := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = makeTarget(dir, name) // three open file descriptions of one lock file
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	log, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(strings.ReplaceAll(string(log), "\n", " "))
	if len(lines) != 12 {
		t.Fatalf("log %q: want 3 builds", log)
	}
	for i := 0; i < len(lines); i += 4 {
		if lines[i] != "start" || lines[i+2] != "end" || lines[i+1] != lines[i+3] {
			t.Fatalf("builds overlapped: %q", log)
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		if _, err := os.Stat(filepath.Join(dir, "out", name)); err != nil {
			t.Fatalf("out/%s not built: %v", name, err)
		}
	}
}

func TestNoMakeRuleMeansJustCheckExistence(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte("all:\n"), 0o644)
	if err := makeTarget(dir, "something-prebuilt"); err != nil {
		t.Fatalf("a name without a rule: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte("out/x:\n\t@echo broken >&2; exit 3\n"), 0o644)
	if err := makeTarget(dir, "x"); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("a failing build: %v", err)
	}
}

func TestOverridesAreOnlyChecked(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "my-host")
	os.WriteFile(bin, nil, 0o755)
	t.Setenv("MOE_HOST_BIN", bin)
	if p, err := requirePath("moe-host"); err != nil || p != bin {
		t.Fatalf("MOE_HOST_BIN: %q %v", p, err)
	}
	t.Setenv("MOE_OUT", dir)
	if _, err := requirePath("libgolang.so"); err == nil || !strings.Contains(err.Error(), "$MOE_OUT") {
		t.Fatalf("missing under MOE_OUT: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "libgolang.so"), nil, 0o644)
	if p, err := requirePath("libgolang.so"); err != nil || p != filepath.Join(dir, "libgolang.so") {
		t.Fatalf("MOE_OUT: %q %v", p, err)
	}
}
