package hostbalance

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// Checked only (moectl validate), a dns config resolves nothing and starts no
// re-resolution; for real it resolves at once and keeps a goroutine refreshing.
func TestCheckOnlyResolvesNothing(t *testing.T) {
	var lookups atomic.Int64
	old := lookupIP
	lookupIP = func(context.Context, string) ([]netip.Addr, error) {
		lookups.Add(1)
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	t.Cleanup(func() { lookupIP = old })
	const js = `{"dns": {"name": "backend.internal", "port": 8080, "refresh": "100ms"}}`

	var c *Config
	fakeframework.StartsNoGoroutine(t, func() {
		var err error
		if c, _, err = fakeframework.Check[*Config](t, Name, newConfig, js, false); err != nil {
			t.Fatal(err)
		}
	})
	if c.dns != nil || lookups.Load() != 0 {
		t.Errorf("resolver %v, %d lookups", c.dns, lookups.Load())
	}
	c.Destroy()

	var real *Config
	fakeframework.StartsGoroutine(t, func() { real, _ = parse(t, js) })
	if lookups.Load() == 0 {
		t.Error("the real Init did not resolve: the test proves nothing")
	}
	real.Destroy()
	<-real.dns.done
}
