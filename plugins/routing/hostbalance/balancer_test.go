package hostbalance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// newTestBalancer builds a balancer for strategy over n hosts
// 127.0.0.1:9001.. with the given weights (nil: all 1), deterministic.
func newTestBalancer(t testing.TB, strategy string, n int, weights []float64, tweak func(*Config)) *balancer {
	t.Helper()
	c := newConfig().(*Config)
	c.Strategy = strategy
	if tweak != nil {
		tweak(c)
	}
	o := c.options()
	b := newBalancer(o, nopMetrics{})
	b.rng = rand.New(rand.NewPCG(42, 1))
	addrs := make([]string, n)
	ws := make([]float64, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", 9001+i)
		ws[i] = 1
		if weights != nil {
			ws[i] = weights[i]
		}
	}
	b.setHosts(addrs, ws)
	return b
}

func mustPick(t testing.TB, b *balancer, now int64, key uint64, hasKey bool) *host {
	t.Helper()
	h, res := b.pick(now, key, hasKey)
	if res != picked {
		t.Fatalf("pick: result %v", res)
	}
	return h
}

// counts picks n times (releasing each) and counts per address.
func counts(t testing.TB, b *balancer, n int, now int64) map[string]int {
	out := map[string]int{}
	for i := 0; i < n; i++ {
		h := mustPick(t, b, now, 0, false)
		out[h.addr]++
		b.release(h)
	}
	return out
}

func TestRoundRobinCyclesAndSkipsEjected(t *testing.T) {
	b := newTestBalancer(t, RoundRobin, 3, nil, nil)
	var seq []string
	for i := 0; i < 6; i++ {
		h := mustPick(t, b, 0, 0, false)
		seq = append(seq, h.addr)
		b.release(h)
	}
	for i := 0; i < 3; i++ {
		if seq[i] != seq[i+3] || seq[i] == seq[(i+1)%3] {
			t.Fatalf("not a cycle over the 3 hosts: %v", seq)
		}
	}
	b.set.Load().hosts[1].ejectedUntil.Store(100 * ms)
	if c := counts(t, b, 100, 0); c["127.0.0.1:9002"] != 0 || c["127.0.0.1:9001"] != 50 || c["127.0.0.1:9003"] != 50 {
		t.Fatalf("with 9002 ejected: %v", c)
	}
	if c := counts(t, b, 99, 100*ms); c["127.0.0.1:9002"] != 33 {
		t.Fatalf("after the ejection: %v", c)
	}
}

func TestWeightedRoundRobinIsSmooth(t *testing.T) {
	b := newTestBalancer(t, WeightedRoundRobin, 3, []float64{5, 1, 1}, nil)
	var seq []byte
	for i := 0; i < 7; i++ {
		h := mustPick(t, b, 0, 0, false)
		seq = append(seq, "abc"[h.addr[len(h.addr)-1]-'1'])
		b.release(h)
	}
	// nginx's smooth weighted round robin for 5,1,1.
	if string(seq) != "aabacaa" {
		t.Fatalf("sequence %s, want aabacaa", seq)
	}
	if c := counts(t, b, 7000, 0); c["127.0.0.1:9001"] != 5000 || c["127.0.0.1:9002"] != 1000 {
		t.Fatalf("7000 picks: %v", c)
	}
}

func TestRandomFollowsWeights(t *testing.T) {
	b := newTestBalancer(t, Random, 3, []float64{2, 1, 1}, nil)
	c := counts(t, b, 40000, 0)
	if math.Abs(float64(c["127.0.0.1:9001"])-20000) > 600 || math.Abs(float64(c["127.0.0.1:9002"])-10000) > 500 {
		t.Fatalf("40000 picks with weights 2,1,1: %v", c)
	}
	b = newTestBalancer(t, Random, 4, nil, nil)
	for addr, n := range counts(t, b, 40000, 0) {
		if math.Abs(float64(n)-10000) > 500 {
			t.Fatalf("%s got %d of 40000", addr, n)
		}
	}
}

func TestConsistentHashIsStickyAndMovesLittle(t *testing.T) {
	for _, algo := range []string{"ring", "maglev"} {
		t.Run(algo, func(t *testing.T) {
			tweak := func(c *Config) { c.Hash.Algorithm = algo }
			b := newTestBalancer(t, ConsistentHash, 10, nil, tweak)
			const keys = 20000
			before := make([]string, keys)
			spread := map[string]int{}
			for k := 0; k < keys; k++ {
				key := rand.New(rand.NewPCG(uint64(k), 9)).Uint64()
				h := mustPick(t, b, 0, key, true)
				before[k] = h.addr
				spread[h.addr]++
				b.release(h)
				if again := mustPick(t, b, 0, key, true); again != h {
					t.Fatalf("key %d: %s then %s", k, h.addr, again.addr)
				}
			}
			for addr, n := range spread {
				if n < keys/10*7/10 || n > keys/10*13/10 {
					t.Fatalf("%s has %d of %d keys: %v", addr, n, keys, spread)
				}
			}
			// Eject one host: only its keys move.
			ejected := b.set.Load().hosts[3]
			ejected.ejectedUntil.Store(time.Hour.Nanoseconds())
			moved := 0
			for k := 0; k < keys; k++ {
				key := rand.New(rand.NewPCG(uint64(k), 9)).Uint64()
				h := mustPick(t, b, 0, key, true)
				b.release(h)
				if h == ejected {
					t.Fatalf("key %d went to the ejected host", k)
				}
				if h.addr != before[k] {
					if before[k] != ejected.addr {
						t.Fatalf("key %d moved from %s (not ejected) to %s", k, before[k], h.addr)
					}
					moved++
				}
			}
			if moved != spread[ejected.addr] {
				t.Fatalf("moved %d keys, the ejected host had %d", moved, spread[ejected.addr])
			}
			// A host removed from the list (DNS): about 1/10 of the keys move.
			ejected.ejectedUntil.Store(0)
			var addrs []string
			var ws []float64
			for i, h := range b.set.Load().hosts {
				if i != 7 {
					addrs, ws = append(addrs, h.addr), append(ws, 1)
				}
			}
			b.setHosts(addrs, ws)
			moved = 0
			for k := 0; k < keys; k++ {
				key := rand.New(rand.NewPCG(uint64(k), 9)).Uint64()
				h := mustPick(t, b, 0, key, true)
				b.release(h)
				if h.addr != before[k] {
					moved++
				}
			}
			if moved > keys*15/100 {
				t.Fatalf("removing 1 of 10 hosts moved %d of %d keys", moved, keys)
			}
		})
	}
}

func TestConsistentHashFollowsWeights(t *testing.T) {
	for _, algo := range []string{"ring", "maglev"} {
		b := newTestBalancer(t, ConsistentHash, 2, []float64{3, 1}, func(c *Config) { c.Hash.Algorithm = algo })
		n := 0
		for k := 0; k < 20000; k++ {
			h := mustPick(t, b, 0, rand.New(rand.NewPCG(uint64(k), 3)).Uint64(), true)
			b.release(h)
			if h.addr == "127.0.0.1:9001" {
				n++
			}
		}
		if n < 14000 || n > 16000 {
			t.Fatalf("%s: weight 3 of 4 got %d of 20000 keys", algo, n)
		}
	}
}

func TestLeastRequestAvoidsBusyHosts(t *testing.T) {
	b := newTestBalancer(t, LeastRequest, 2, nil, nil)
	hosts := b.set.Load().hosts
	hosts[0].active.Store(5)
	// Two hosts, two choices: both are compared each time.
	if c := counts(t, b, 100, 0); c["127.0.0.1:9002"] != 100 {
		t.Fatalf("picks %v", c)
	}
	// Ten hosts: the busy one only wins against nobody (it is never picked:
	// its competitor always has fewer requests).
	b = newTestBalancer(t, LeastRequest, 10, nil, nil)
	b.set.Load().hosts[4].active.Store(3)
	if c := counts(t, b, 1000, 0); c["127.0.0.1:9005"] != 0 {
		t.Fatalf("busy host picked %d times of 1000", c["127.0.0.1:9005"])
	}
}

func TestPeakEWMAPrefersFastHostsAndForgetsSlowly(t *testing.T) {
	b := newTestBalancer(t, PeakEWMA, 2, nil, func(c *Config) { c.Outlier.ConsecutiveFailures = 0 })
	fast, slow := b.set.Load().hosts[0], b.set.Load().hosts[1]
	now := int64(0)
	b.feedback(fast, now, 10*ms, success)
	b.feedback(slow, now, 50*ms, success)
	if c := counts(t, b, 50, now); c[fast.addr] != 50 {
		t.Fatalf("fast 10ms vs slow 50ms: %v", c)
	}
	// Load counts: the fast host with 5 requests in flight scores 60ms.
	fast.active.Store(5)
	if h := mustPick(t, b, now, 0, false); h != slow {
		t.Fatalf("fast host with 5 active picked over the idle slow one")
	}
	b.release(slow)
	fast.active.Store(0)
	// A peak replaces the estimate at once...
	b.feedback(fast, now, 500*ms, success)
	if lat, _, _ := fast.estimate(now, b.opts.tau); lat != float64(500*ms) {
		t.Fatalf("after a 500ms peak: %v", time.Duration(lat))
	}
	// ...and fast samples pull it down with the time they cover.
	now += 5 * time.Second.Nanoseconds()
	b.feedback(fast, now, 10*ms, success)
	lat, _, _ := fast.estimate(now, b.opts.tau)
	if want := 500*math.Exp(-0.5) + 10*(1-math.Exp(-0.5)); math.Abs(lat/1e6-want) > 0.01 {
		t.Fatalf("5s after: %.2fms, want %.2fms", lat/1e6, want)
	}
	// Without samples an estimate decays towards zero: an idle host is tried
	// again.
	idle, _, _ := fast.estimate(now+10*time.Second.Nanoseconds(), b.opts.tau)
	if math.Abs(idle-lat*math.Exp(-1)) > 1 {
		t.Fatalf("10s idle: %v, want %v", idle, lat*math.Exp(-1))
	}
}

func TestPeakEWMASuccessRateAndFallbacks(t *testing.T) {
	b := newTestBalancer(t, PeakEWMA, 3, nil, func(c *Config) { c.Outlier.ConsecutiveFailures = 0 })
	s := b.set.Load()
	a, bad, fresh := s.hosts[0], s.hosts[1], s.hosts[2]
	// No samples anywhere: the default latency.
	if sc := b.score(s, fresh, 0); sc != float64(10*ms) {
		t.Fatalf("score without samples %v, want the 10ms default", sc)
	}
	b.feedback(a, 0, 20*ms, success)
	for i := 0; i < 20; i++ {
		b.feedback(bad, 0, 20*ms, failure)
	}
	// A host without samples gets the average of the others.
	if sc := b.score(s, fresh, 0); sc != float64(20*ms) {
		t.Fatalf("fresh host scores %v, want the 20ms average", time.Duration(sc))
	}
	// Same latency, all failures: the success rate floor (0.1) makes it 10x.
	_, succ, _ := bad.estimate(0, b.opts.tau)
	if succ != minSuccessRate || b.score(s, bad, 0) != 10*b.score(s, a, 0) {
		t.Fatalf("success rate %v, scores %v vs %v", succ, b.score(s, bad, 0), b.score(s, a, 0))
	}
	// Failures are forgotten with time: 30s later (3 decay times) mostly recovered.
	b.feedback(bad, 30*time.Second.Nanoseconds(), 20*ms, success)
	if _, succ, _ := bad.estimate(30*time.Second.Nanoseconds(), b.opts.tau); succ < 0.5 {
		t.Fatalf("success rate 30s later %v", succ)
	}
}

func TestOutlierEjectionBacksOffAndComesBack(t *testing.T) {
	b := newTestBalancer(t, RoundRobin, 2, nil, func(c *Config) {
		c.Outlier.ConsecutiveFailures = 3
	})
	h := b.set.Load().hosts[0]
	base := 30 * time.Second.Nanoseconds()
	fail := func(now int64, n int) {
		for i := 0; i < n; i++ {
			b.feedback(h, now, ms, failure)
		}
	}
	fail(0, 2)
	b.feedback(h, 0, ms, success) // a success resets the run
	fail(0, 2)
	if !h.available(0) {
		t.Fatal("ejected before 3 failures in a row")
	}
	fail(0, 1)
	if h.available(base-1) || !h.available(base) {
		t.Fatalf("first ejection should last 30s: until %v", time.Duration(h.ejectedUntil.Load()))
	}
	// Failures of requests still in flight do not extend it.
	fail(base/2, 10)
	if h.ejectedUntil.Load() != base {
		t.Fatalf("in-flight failures changed the ejection: %v", time.Duration(h.ejectedUntil.Load()))
	}
	// Back, fails again at once: twice as long.
	fail(base, 3)
	if got := h.ejectedUntil.Load() - base; got != 2*base {
		t.Fatalf("second ejection %v, want 60s", time.Duration(got))
	}
	// Healthy for 5 base periods after it: the multiplier is worn down, 30s again.
	back := 3 * base
	fail(back+5*base, 3)
	if got := h.ejectedUntil.Load() - (back + 5*base); got != base {
		t.Fatalf("ejection after a long healthy spell %v, want 30s", time.Duration(got))
	}
	// Capped at max_ejection_time.
	now := h.ejectedUntil.Load()
	for i := 0; i < 20; i++ {
		fail(now, 3)
		now = h.ejectedUntil.Load()
	}
	if d := now - h.back + (h.back - now); d != 0 || h.mult < 10 {
		t.Fatalf("multiplier %d", h.mult)
	}
	last := h.ejectedUntil.Load()
	fail(last, 3)
	if got := h.ejectedUntil.Load() - last; got != 300*time.Second.Nanoseconds() {
		t.Fatalf("ejection not capped at 300s: %v", time.Duration(got))
	}
}

func TestEveryHostEjectedFallsBack(t *testing.T) {
	for _, s := range strategies {
		t.Run(s, func(t *testing.T) {
			b := newTestBalancer(t, s, 3, nil, func(c *Config) {
				c.Outlier.ConsecutiveFailures = 1
				c.Hash.Key = nil
			})
			for _, h := range b.set.Load().hosts {
				b.feedback(h, 0, ms, failure)
			}
			if h, res := b.pick(ms, 123, true); res != allEjected || h != nil {
				t.Fatalf("all ejected: %v %v", h, res)
			}
			// They come back after base_ejection_time.
			if _, res := b.pick(30*time.Second.Nanoseconds(), 123, true); res != picked {
				t.Fatalf("30s later: %v", res)
			}
		})
	}
	b := newTestBalancer(t, RoundRobin, 0, nil, nil)
	if _, res := b.pick(0, 0, false); res != noHosts {
		t.Fatalf("no hosts: %v", res)
	}
}

func TestNeutralAndLatencyOnlyOutcomes(t *testing.T) {
	b := newTestBalancer(t, PeakEWMA, 1, nil, func(c *Config) { c.Outlier.ConsecutiveFailures = 1 })
	h := b.set.Load().hosts[0]
	b.feedback(h, 0, 5*ms, neutral)
	if _, _, ok := h.estimate(0, b.opts.tau); ok {
		t.Fatal("a neutral outcome was sampled")
	}
	b.feedback(h, 0, 900*ms, latencyOnly)
	lat, succ, ok := h.estimate(0, b.opts.tau)
	if !ok || lat != float64(900*ms) || succ != 1 || !h.available(ms) {
		t.Fatalf("latency-only: lat %v succ %v ok %v available %v", lat, succ, ok, h.available(ms))
	}
}
