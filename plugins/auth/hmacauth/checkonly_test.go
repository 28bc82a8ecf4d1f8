package hmacauth

import (
	"testing"
	"time"

	"github.com/moeproxy/moe/plugins/internal/redisclient"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// Checked only (moectl validate), a config with the Redis nonce store acquires no Redis
// client: nothing connects, not even the idle connections go-redis keeps for real.
func TestCheckOnlyAcquiresNoRedisClient(t *testing.T) {
	ln := fakeframework.NewListener(t)
	js := mustJSON(t, testConfig(map[string]any{"nonce_store": redisStore(ln.Addr(), nil, map[string]any{"min_idle_conns": 2})}))
	live := redisclient.Live()
	var c *Config
	fakeframework.StartsNoGoroutine(t, func() {
		var err error
		if c, _, err = fakeframework.Check[*Config](t, plugin, newConfig, js, false); err != nil {
			t.Fatal(err)
		}
	})
	if n := redisclient.Live(); n != live {
		t.Errorf("%d Redis clients live, want %d", n, live)
	}
	ln.WantNoConnection(t, 200*time.Millisecond)
	c.Destroy()
	if n := redisclient.Live(); n != live {
		t.Errorf("after Destroy: %d Redis clients live, want %d", n, live)
	}

	// The converse: for real, the client opens its idle connections.
	real, _, err := parse(t, js, false)
	if err != nil {
		t.Fatal(err)
	}
	defer real.Destroy()
	if !tb.Poll(5*time.Second, func() bool { return ln.Connections() > 0 }) {
		t.Error("the real client made no connection: the test proves nothing")
	}
}

// Checked only, the process-wide memory store is not resized to the checked config's
// nonce_cache_size.
func TestCheckOnlyLeavesTheSharedNonceCacheAlone(t *testing.T) {
	newTestConfig(t, map[string]any{"nonce_cache_size": 4096}) // sizes the shared cache
	per := sharedNonces(4096).shards[0].max
	c, _, err := fakeframework.Check[*Config](t, plugin, newConfig, mustJSON(t, testConfig(map[string]any{"nonce_cache_size": 1 << 20})), false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	nonces.shards[0].mu.Lock()
	got := nonces.shards[0].max
	nonces.shards[0].mu.Unlock()
	if got != per {
		t.Errorf("shared cache resized by a checked config: %d per shard, want %d", got, per)
	}
}

// What only Init finds is found when checking: a key id used twice across the
// consumers.
func TestCheckOnlyFindsInitErrors(t *testing.T) {
	fakeframework.WantCheckError(t, plugin, mustJSON(t, map[string]any{"consumers": []map[string]any{
		{"name": "alice", "keys": []map[string]any{{"key_id": "k", "secret": aliceSecret}}},
		{"name": "bob", "keys": []map[string]any{{"key_id": "k", "secret": bobSecret}}},
	}}), "consumers[1].keys[0].key_id", `key id "k" is also`)
}
