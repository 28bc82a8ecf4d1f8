package hostbalance

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// MOSN's published experiment, as a deterministic simulation on a virtual
// clock with the plugin's own balancer: 10 servers whose base latency is
// drawn from N(50ms, 10ms), each request's latency from N(base, 5ms), one
// server that with probability 0.1 takes 1000ms instead, each server serving
// at most 8 requests at once (the rest wait in its queue), 16 clients each
// sending its next request when the previous one answered.

type simParams struct {
	servers, clients, concurrency, requests int
	baseMean, baseStd, reqStd               time.Duration
	slowLatency                             time.Duration
	slowProb                                float64
}

var mosnExperiment = simParams{
	servers: 10, clients: 16, concurrency: 8, requests: 20000,
	baseMean: 50 * time.Millisecond, baseStd: 10 * time.Millisecond, reqStd: 5 * time.Millisecond,
	slowLatency: 1000 * time.Millisecond, slowProb: 0.1,
}

type simReq struct {
	h      *host
	server int
	start  int64
}

type simEvent struct {
	at  int64
	seq int
	req *simReq
}

type eventQueue []simEvent

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type simServer struct {
	base  float64
	slow  bool
	busy  int
	queue []*simReq
}

// drawBases draws the servers' base latencies from N(baseMean, baseStd)
// (at least 1ms); server 0 is the one that is sometimes slow.
func drawBases(p simParams, seed uint64) []time.Duration {
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([]time.Duration, p.servers)
	for i := range out {
		out[i] = time.Duration(max(float64(p.baseMean)+r.NormFloat64()*float64(p.baseStd), float64(time.Millisecond)))
	}
	return out
}

// simulate runs the experiment for one strategy and returns every request's
// latency (queueing included) in ms.
func simulate(p simParams, strategy string, seed uint64) []float64 {
	cfg := newConfig().(*Config)
	cfg.Strategy = strategy
	cfg.Outlier.ConsecutiveFailures = 0 // nothing fails here: latency only
	return simWith(p, cfg.options(), seed, seed)
}

// simWith runs the experiment with balancer options o; baseSeed draws the
// servers' base latencies, seed everything else.
func simWith(p simParams, o options, baseSeed, seed uint64) []float64 {
	b := newBalancer(o, nopMetrics{})
	b.rng = rand.New(rand.NewPCG(seed, 1))
	bases := drawBases(p, baseSeed)
	lat := rand.New(rand.NewPCG(seed, 3))

	addrs := make([]string, p.servers)
	weights := make([]float64, p.servers)
	servers := make([]*simServer, p.servers)
	index := map[string]int{}
	for i := range servers {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", 9001+i)
		weights[i] = 1
		index[addrs[i]] = i
		servers[i] = &simServer{base: float64(bases[i]), slow: i == 0}
	}
	b.setHosts(addrs, weights)

	var q eventQueue
	seq := 0
	serve := func(now int64, r *simReq) {
		s := servers[r.server]
		s.busy++
		d := s.base + lat.NormFloat64()*float64(p.reqStd)
		if s.slow && lat.Float64() < p.slowProb {
			d = float64(p.slowLatency)
		}
		d = max(d, float64(time.Millisecond))
		seq++
		heap.Push(&q, simEvent{at: now + int64(d), seq: seq, req: r})
	}
	issued := 0
	issue := func(now int64) {
		if issued == p.requests {
			return
		}
		issued++
		h, _ := b.pick(now, 0, false)
		r := &simReq{h: h, server: index[h.addr], start: now}
		if s := servers[r.server]; s.busy < p.concurrency {
			serve(now, r)
		} else {
			s.queue = append(s.queue, r)
		}
	}
	for c := 0; c < p.clients; c++ {
		issue(0)
	}
	out := make([]float64, 0, p.requests)
	for q.Len() > 0 {
		e := heap.Pop(&q).(simEvent)
		r, now := e.req, e.at
		b.feedback(r.h, now, now-r.start, success)
		b.release(r.h)
		out = append(out, float64(now-r.start)/1e6)
		s := servers[r.server]
		s.busy--
		if len(s.queue) > 0 {
			next := s.queue[0]
			s.queue = s.queue[1:]
			serve(now, next)
		}
		issue(now)
	}
	return out
}

type latencySummary struct {
	mean, p50, p90, p99, p999, max float64
}

func summarize(ms []float64) latencySummary {
	s := slices.Clone(ms)
	slices.Sort(s)
	q := func(f float64) float64 { return s[min(len(s)-1, int(f*float64(len(s))))] }
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	return latencySummary{mean: sum / float64(len(s)), p50: q(0.50), p90: q(0.90), p99: q(0.99), p999: q(0.999), max: s[len(s)-1]}
}

func (l latencySummary) String() string {
	return fmt.Sprintf("mean %6.1f  p50 %6.1f  p90 %6.1f  p99 %6.1f  p99.9 %6.1f  max %6.1f", l.mean, l.p50, l.p90, l.p99, l.p999, l.max)
}

// TestSimulationPeakEWMABeatsRoundRobinAndLeastRequest reproduces the
// experiment for five seeds (base latencies and request draws); peak-ewma's p99 must be below round robin's
// and least request's in each.
func TestSimulationPeakEWMABeatsRoundRobinAndLeastRequest(t *testing.T) {
	var table strings.Builder
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		res := map[string]latencySummary{}
		for _, s := range []string{RoundRobin, Random, LeastRequest, PeakEWMA} {
			res[s] = summarize(simulate(mosnExperiment, s, seed))
			fmt.Fprintf(&table, "seed %d %-14s %v\n", seed, s, res[s])
		}
		pe := res[PeakEWMA].p99
		if pe >= res[RoundRobin].p99 || pe >= res[LeastRequest].p99 {
			t.Errorf("seed %d: peak-ewma p99 %.1fms is not below round-robin's %.1fms and least-request's %.1fms",
				seed, pe, res[RoundRobin].p99, res[LeastRequest].p99)
		}
	}
	t.Logf("latency in ms, %d requests per run:\n%s", mosnExperiment.requests, table.String())
}
