package extauth

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

type passThrough struct{}

func (passThrough) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if _, ok := h.Get("authorization"); !ok {
		return api.Stop
	}
	return api.Continue
}

func benchFilter(b *testing.B, f api.ReceiverFilter) {
	req := withAuth("Bearer good")
	ctx := fakeframework.NewContext("ext-auth", req)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if f.OnReceive(ctx, req, nil, nil) != api.Continue {
			b.Fatal("denied")
		}
	}
}

// Baseline: the same fake request objects, no work.
func BenchmarkBaselinePassThrough(b *testing.B) { benchFilter(b, passThrough{}) }

// Cached: every request after the first is a cache hit (key hash + LRU get).
func BenchmarkCachedAllow(b *testing.B) {
	svc := newAuthService(b)
	cfg, _ := newCfg(b, `{"url":"`+svc.URL+`","cache":{"ttl":"1h"},"allowed_upstream_headers":["x-user"]}`)
	benchFilter(b, &filter{rt: cfg.rt})
	if svc.calls.Load() != 1 {
		b.Fatalf("calls %d", svc.calls.Load())
	}
}

// Uncached: one HTTP/1.1 check per request to a service on 127.0.0.1 over a
// reused connection (includes the service's own cost in this process).
func BenchmarkUncachedAllowLocalService(b *testing.B) {
	svc := newAuthService(b)
	cfg, _ := newCfg(b, `{"url":"`+svc.URL+`","allowed_upstream_headers":["x-user"],"timeout":"2s"}`)
	benchFilter(b, &filter{rt: cfg.rt})
}
