package limitcount

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/moeproxy/moe/plugins/internal/redisclient"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// Checked only (moectl validate), a config acquires no Redis client: nothing connects, not
// even the idle connections go-redis keeps for real.
func TestCheckOnlyAcquiresNoRedisClient(t *testing.T) {
	ln := fakeframework.NewListener(t)
	raw, _ := json.Marshal(map[string]any{"count": 10, "time_window": "1s", "failure_policy": "local",
		"redis": map[string]any{"addrs": []string{ln.Addr()}, "min_idle_conns": 2}})
	live := redisclient.Live()
	var c *Config
	fakeframework.StartsNoGoroutine(t, func() {
		var err error
		if c, _, err = fakeframework.Check[*Config](t, Name, newConfig, string(raw), false); err != nil {
			t.Fatal(err)
		}
	})
	if n := redisclient.Live(); n != live {
		t.Errorf("%d Redis clients live, want %d", n, live)
	}
	ln.WantNoConnection(t, 200*time.Millisecond)
	c.Destroy()

	// The converse: for real, the client opens its idle connections.
	real, _, err := fakeframework.Parse[*Config](t, Name, newConfig, string(raw), false)
	if err != nil {
		t.Fatal(err)
	}
	defer real.Destroy()
	if !tb.Poll(5*time.Second, func() bool { return ln.Connections() > 0 }) {
		t.Error("the real client made no connection: the test proves nothing")
	}
}
