package registry_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

func TestRegisterRejectsBadPlugins(t *testing.T) {
	ok := func(any) api.Filter { return nil }
	cases := []struct {
		name string
		p    registry.Plugin
	}{
		{"empty name", registry.Plugin{Factory: ok}},
		{"upper case", registry.Plugin{Name: "Bad", Factory: ok}},
		{"64 bytes", registry.Plugin{Name: strings.Repeat("a", 64), Factory: ok}},
		{"reserved", registry.Plugin{Name: "moe", Factory: ok}},
		{"no factory", registry.Plugin{Name: "nofactory"}},
		{"config not a pointer", registry.Plugin{Name: "valconf", Factory: ok, NewConfig: func() any { return struct{}{} }}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			registry.Register(tc.p)
		})
	}
	long := strings.Repeat("b", 63)
	registry.Register(registry.Plugin{Name: long, Factory: ok})
	defer registry.Unregister(long)
	if _, found := registry.Get(long); !found {
		t.Error("a 63-byte name was not registered")
	}
}

var run int

func TestRegisterLookupAndListeners(t *testing.T) {
	run++
	a, b := fmt.Sprintf("reg-a%d", run), fmt.Sprintf("reg-b%d", run)
	t.Cleanup(func() { registry.Unregister(a); registry.Unregister(b) })
	var seen []string
	registry.Register(registry.Plugin{Name: a, Factory: func(any) api.Filter { return nil }})
	registry.OnRegister(func(p *registry.Plugin) {
		if p.Name == a || p.Name == b {
			seen = append(seen, p.Name)
		}
	})
	registry.Register(registry.Plugin{Name: b, Factory: func(any) api.Filter { return nil }})
	if _, ok := registry.Get(b); !ok {
		t.Fatal("plugin not found")
	}
	if len(seen) != 2 || seen[0] != a || seen[1] != b {
		t.Errorf("listener saw %v: want the existing plugin, then the new one", seen)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("duplicate accepted")
			}
		}()
		registry.Register(registry.Plugin{Name: a, Factory: func(any) api.Filter { return nil }})
	}()
}

func TestTypedFactory(t *testing.T) {
	type cfg struct{ N int }
	f := registry.Typed(func(c *cfg) api.Filter { return c.N })
	if got := f(&cfg{N: 7}); got != 7 {
		t.Errorf("got %v", got)
	}
}
