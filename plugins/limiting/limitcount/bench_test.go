package limitcount

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// asyncNoop is a baseline: a plugin that does nothing but declares MayBlock
// for OnReceive, so it pays the framework's goroutine hop like limit-count.
type asyncNoop struct{}

func (asyncNoop) OnReceive(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	return api.Continue
}

func init() {
	registry.Register(registry.Plugin{
		Name:    "limit-count-bench-async-noop",
		Factory: func(any) api.Filter { return asyncNoop{} },
		Needs:   api.Needs{MayBlock: api.BlockReceive},
	})
}

// stubStore answers without I/O: the Go side of the plugin alone.
type stubStore struct{ reject bool }

func (s stubStore) take(context.Context, string) (decision, error) {
	if s.reject {
		return decision{resetMS: 730, retryMS: 730}, nil
	}
	return decision{allowed: true, remaining: 41, resetMS: 730}, nil
}

// benchChain builds a moe chain of one plugin (nil config: an empty chain),
// optionally replacing limit-count's store.
func benchChain(b *testing.B, name string, cfg map[string]any, st store) any {
	if name == "" {
		c, err := fakeenvoy.ParseFilter(filtermanager.Parser{}, `{"plugins":[]}`)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	p, _ := registry.Get(name)
	raw, _ := json.Marshal(cfg)
	pc, err := config.DecodePlugin(p, raw, false)
	if err != nil {
		b.Fatal(err)
	}
	if c, ok := pc.(*Config); ok {
		b.Cleanup(c.Destroy)
		if st != nil {
			c.rt.store = st
		}
	}
	return filtermanager.Build([]config.Entry{{Name: name, Plugin: p, Config: pc, HasConfig: true}})
}

// benchRedisTimeout replaces the 50 ms default: on a loaded machine (make bench runs while
// others build) one call in a few thousand took longer and failed the benchmark.
const benchRedisTimeout = "2s"

// BenchmarkRequest is the cost of one headers-only request through the moe
// filter manager on the framework's fake Envoy (cgo crossings excluded):
// baselines first, then limit-count with a stub store (Go side only), then
// against a local redis-server (one EVALSHA round trip per request).
func BenchmarkRequest(b *testing.B) {
	r := startRedis(b)
	redisCfg := map[string]any{"addrs": []string{r.Addr()}, "timeout": benchRedisTimeout}
	base := func(kv ...any) map[string]any {
		c := map[string]any{"count": 1 << 40, "time_window": "1m", "key": "$header_x-user", "redis": redisCfg}
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	}
	cases := []struct {
		name   string
		plugin string
		cfg    map[string]any
		stub   bool
		reject bool
	}{
		{"baseline-empty-chain", "", nil, false, false},
		{"baseline-async-noop-plugin", "limit-count-bench-async-noop", nil, false, false},
		{"go-side-stub-store", Name, base(), true, false},
		{"go-side-stub-store-composite-key", Name, base("key", "$method:$header_x-user"), true, false},
		{"go-side-stub-store-no-headers", Name, base("headers", false), true, false},
		{"go-side-stub-store-rejected-429", Name, base(), true, true},
		{"redis-fixed", Name, base(), false, false},
		{"redis-sliding", Name, base("window", "sliding"), false, false},
		{"redis-fixed-no-headers", Name, base("headers", false), false, false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var st store
			if tc.stub {
				st = stubStore{reject: tc.reject}
			}
			chain := benchChain(b, tc.plugin, tc.cfg, st)
			bench := fakeenvoy.NewBench(filtermanager.Factory, chain, [2]string{"x-user", "alice"})
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if s := bench.Run(); s != envoy.Continue && !tc.reject {
					b.Fatalf("request not admitted: %v", s)
				}
			}
		})
	}
}

// BenchmarkRedisCall is the store call alone (go-redis + loopback round trip
// + the Lua script), to split BenchmarkRequest's redis cases.
func BenchmarkRedisCall(b *testing.B) {
	r := startRedis(b)
	for _, window := range []string{"fixed", "sliding"} {
		b.Run(window, func(b *testing.B) {
			c := newConfig().(*Config)
			_ = json.Unmarshal([]byte(fmt.Sprintf(`{"count":%d,"time_window":"1m","window":%q,"redis":{"addrs":[%q],"timeout":%q}}`, int64(1)<<40, window, r.Addr(), benchRedisTimeout)), c)
			if err := c.Validate(); err != nil {
				b.Fatal(err)
			}
			if err := c.Init(config.NewEnv(Name, false)); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(c.Destroy)
			key := c.redisKey("alice")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.rt.take(key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRequestParallel: throughput with requests from all cores sharing
// one client pool and one hot key.
func BenchmarkRequestParallel(b *testing.B) {
	r := startRedis(b)
	chain := benchChain(b, Name, map[string]any{"count": 1 << 40, "time_window": "1m", "key": "$header_x-user",
		"redis": map[string]any{"addrs": []string{r.Addr()}, "timeout": benchRedisTimeout}}, nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		bench := fakeenvoy.NewBench(filtermanager.Factory, chain, [2]string{"x-user", "alice"})
		for pb.Next() {
			bench.Run()
		}
	})
}
