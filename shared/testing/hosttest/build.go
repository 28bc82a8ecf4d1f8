package hosttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// Binaries are built for the test that runs them, so an end-to-end test never passes against
// stale code: the first Require of a name in a test process runs `make -s out/<name>` at the
// repository root (a no-op when the binary is newer than its sources, as after `make build`).
// Concurrently running test packages take turns through an exclusive flock on out/.build.lock,
// so two of them never write the same binary at once. With $MOE_OUT set (binaries built
// elsewhere), or for a binary named by an override variable ($MOE_HOST_BIN, $MOE_NETONLY_BIN),
// nothing is built: the file must exist.

// binaryOverrides maps a binary to the environment variable that replaces it by a path.
var binaryOverrides = map[string]string{
	"moe-host":         "MOE_HOST_BIN",
	"moe-host-netonly": "MOE_NETONLY_BIN",
}

// buildTimeout bounds one make run (a first build of everything takes about two minutes).
const buildTimeout = 9 * time.Minute

var (
	buildMu sync.Mutex
	built   = map[string]error{} // name -> outcome of its make run in this process
)

// Require returns the absolute path of the binary name (a file name under out/, e.g.
// "moe-host", "libgolang.so"), built or checked as described above. When it is missing or
// cannot be built the test is skipped, or fails when MOE_REQUIRE_HOST=1 (set by `make test`).
func Require(t tb.TB, name string) string {
	t.Helper()
	path, err := requirePath(name)
	if err != nil {
		if os.Getenv("MOE_REQUIRE_HOST") == "1" {
			t.Fatalf("%v", err)
		}
		t.Skipf("%v", err)
	}
	return path
}

func requirePath(name string) (string, error) {
	if v := binaryOverrides[name]; v != "" {
		if p := os.Getenv(v); p != "" {
			return existing(p, "$"+v)
		}
	}
	if d := os.Getenv("MOE_OUT"); d != "" {
		return existing(filepath.Join(d, name), "$MOE_OUT")
	}
	root, err := repoRoot()
	if err != nil {
		return "", fmt.Errorf("%v; set MOE_OUT", err)
	}
	if err := buildOnce(root, name); err != nil {
		return "", err
	}
	return existing(filepath.Join(root, "out", name), "make")
}

func existing(p, from string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("%s (from %s) is missing (run make build): %v", abs, from, err)
	}
	return abs, nil
}

func buildOnce(root, name string) error {
	buildMu.Lock()
	defer buildMu.Unlock()
	if err, ok := built[name]; ok {
		return err
	}
	err := makeTarget(root, name)
	built[name] = err
	return err
}

// makeTarget runs `make -s out/<name>` under the build lock. A name without a make rule is
// only checked for existence (by the caller).
func makeTarget(root, name string) error {
	out := filepath.Join(root, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(out, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close() // releases the flock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %v", lock.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "out/"+name)
	cmd.Dir = root
	cmd.Env = makeEnv()
	b, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	if strings.Contains(string(b), "No rule to make target 'out/"+name+"'") {
		return nil // not a make product: it just has to exist
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("make -s out/%s did not finish within %v:\n%s", name, buildTimeout, b)
	}
	return fmt.Errorf("make -s out/%s (building what the test runs): %v\n%s", name, err, b)
}

// makeEnv is the environment without a parent make's variables: under `make test` the tests
// inherit MAKEFLAGS (jobserver descriptors they do not have, -n, -k...) that must not leak into
// this independent make run.
func makeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "MAKE_TERMOUT", "MAKE_TERMERR":
			continue
		}
		env = append(env, kv)
	}
	return env
}
