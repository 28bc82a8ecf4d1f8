package hosttest

import (
	"debug/buildinfo"
	"os"
	"slices"
	"strings"
	"testing"
)

// The shipped library and the test libraries link the cgocheck=0 default
// (build/cshared.mk): without it every request pays the runtime's pointer
// walk, and B1 in make bench would not be measured like the moe configs.
func TestLibrariesDefaultToTheCgoCheckOff(t *testing.T) {
	for _, name := range []string{"libgolang.so", "libconformance.so", "libmoe-e2e.so"} {
		info, err := buildinfo.ReadFile(Require(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var ldflags string
		for _, s := range info.Settings {
			if s.Key == "-ldflags" {
				ldflags = s.Value
			}
		}
		if !strings.Contains(ldflags, "runtime.godebugDefault=cgocheck=0") {
			t.Errorf("%s was linked with -ldflags %q, want the default GODEBUG cgocheck=0", name, ldflags)
		}
	}
}

// Test hosts run with the check on unless the test chose a GODEBUG.
func TestTestHostsRunWithTheCgoCheckOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want bool
	}{
		{"default", nil, true},
		{"a test's own GODEBUG", []string{"GODEBUG=asyncpreemptoff=1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GODEBUG", "") // restored after the test
			os.Unsetenv("GODEBUG")  // whatever the caller of go test had
			p := prepare(t, "{}", nil, Options{Env: tc.env}.withDefaults())
			if got := slices.Contains(p.cmd.Env, CgoCheckEnv); got != tc.want {
				t.Errorf("%s in the host's environment: %v, want %v", CgoCheckEnv, got, tc.want)
			}
		})
	}
}
