package filtermanager

import (
	"fmt"
	"testing"
)

// A consumer read from the filter state is decoded once per chain and JSON;
// malformed JSON is rejected each time and never cached; the cache stops
// growing at maxCachedConsumers but still decodes.
func TestConsumerDecodingsCacheWellFormedConsumersOnly(t *testing.T) {
	var d consumerDecodings
	const alice = `{"name":"alice","group":"admins","attributes":{"tier":"gold"}}`
	first := d.of(alice)
	if first == nil || first.Name != "alice" || first.Group != "admins" || first.Attributes["tier"] != "gold" {
		t.Fatalf("decoded %+v", first)
	}
	if again := d.of(alice); again != first {
		t.Errorf("second read decoded again (%p, first %p)", again, first)
	}
	for _, bad := range []string{"{not json", `{"group":"admins"}`, `{"name":""}`, `[]`} {
		for range 2 {
			if c := d.of(bad); c != nil {
				t.Errorf("%q accepted as %+v", bad, c)
			}
		}
	}
	if n := d.cache.n.Load(); n != 1 {
		t.Errorf("%d entries cached, want 1 (malformed JSON is not cached)", n)
	}
	for i := d.cache.n.Load(); i < maxCachedConsumers+10; i++ {
		if c := d.of(fmt.Sprintf(`{"name":"c%d"}`, i)); c == nil || c.Name != fmt.Sprintf("c%d", i) {
			t.Fatalf("consumer %d decoded as %+v", i, c)
		}
	}
	if n := d.cache.n.Load(); n != maxCachedConsumers {
		t.Errorf("%d entries cached, want the bound %d", n, maxCachedConsumers)
	}
}
