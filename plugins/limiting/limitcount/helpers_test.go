package limitcount

import (
	"maps"
	"strconv"
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/testing/redistest"
)

// redisServer is a real redis-server started by the test (redistest).
type redisServer = redistest.Server

func startRedis(t testing.TB, args ...string) *redisServer { return redistest.Start(t, args...) }

// cfgFor builds a plugin config pointing at r, with overrides. A "redis"
// override is merged into the redis section.
func cfgFor(r *redisServer, over map[string]any) map[string]any {
	redisCfg := map[string]any{"addrs": []string{r.Addr()}}
	c := map[string]any{"count": 3, "time_window": "1s"}
	for k, v := range over {
		if k == "redis" {
			maps.Copy(redisCfg, v.(map[string]any))
			continue
		}
		c[k] = v
	}
	c["redis"] = redisCfg
	return c
}

// runner parses a config through the real moe filter manager (the fake Envoy
// of shared/testing/fakeenvoy) and destroys it when the test ends, as Envoy would.
func runner(t testing.TB, cfg map[string]any) *fakeenvoy.Runner {
	t.Helper()
	run, err := fakeenvoy.NewPlugin(Name, cfg)
	if err != nil {
		t.Fatalf("parse %v: %v", cfg, err)
	}
	t.Cleanup(func() { destroy(run) })
	return run
}

func destroy(run *fakeenvoy.Runner) {
	if d, ok := run.Config().(interface{ Destroy() }); ok {
		d.Destroy()
	}
}

func do(t testing.TB, run *fakeenvoy.Runner, kv ...string) *fakeenvoy.Result {
	t.Helper()
	req := fakeenvoy.Request{RouteName: "r1", RemoteAddr: "192.0.2.1:5555"}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "remote" {
			req.RemoteAddr = kv[i+1]
			continue
		}
		req.Headers = append(req.Headers, [2]string{kv[i], kv[i+1]})
	}
	res := run.Do(req)
	if len(res.Violations) > 0 {
		t.Fatalf("SDK violations: %v", res.Violations)
	}
	return res
}

func hdr(res *fakeenvoy.Result, k string) string {
	if v := res.Headers[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func hdrInt(t testing.TB, res *fakeenvoy.Result, k string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(hdr(res, k), 10, 64)
	if err != nil {
		t.Fatalf("header %s = %q: %v (headers %v)", k, hdr(res, k), err, res.Headers)
	}
	return n
}

// counters snapshots the plugin's counters to compare deltas (the fake
// Envoy's stat store is process-wide).
type counters map[string]uint64

func snapshot() counters {
	out := counters{}
	for _, n := range []string{"passed", "rejected", "rejected_empty_key", "redis_errors", "redis_timeouts",
		"failure_passed", "failure_rejected", "fallback_passed", "fallback_rejected"} {
		out[n] = fakeenvoy.Stats.Counter("moe_limit_count_" + n)
	}
	return out
}

func (c counters) delta(name string) uint64 {
	return fakeenvoy.Stats.Counter("moe_limit_count_"+name) - c[name]
}
