package hostbalance

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/moeproxy/moe/shared/api"
)

// The balancer is plain Go over a clock given by the caller (nanoseconds on a
// monotonic scale): the filter passes the process's monotonic clock, the
// simulation test a virtual one, so the strategies the README's experiment
// measures are the ones requests use.

// outcome is what a response tells about its host.
type outcome uint8

const (
	// neutral: nothing (the request did not reach the host: a local reply,
	// no healthy upstream, ...).
	neutral outcome = iota
	// success: an upstream response below 500.
	success
	// failure: a 5xx from the host, or a connect failure, reset or timeout.
	failure
	// latencyOnly: the request ended without a response (the client went
	// away); its duration is a lower bound of the host's latency.
	latencyOnly
)

type strategyKind uint8

const (
	kRoundRobin strategyKind = iota
	kWeightedRoundRobin
	kRandom
	kRing
	kMaglev
	kLeastRequest
	kPeakEWMA
)

// host is one upstream host and what the balancer knows about it. Hosts
// survive DNS refreshes that keep their address.
type host struct {
	addr   string
	weight float64

	active       atomic.Int64
	ejectedUntil atomic.Int64 // monotonic ns; the host is ejected while now < ejectedUntil

	mu sync.Mutex
	// Peak EWMA: the latency estimate (ns) and time-decayed counts of
	// responses, as of stamp.
	sampled   bool
	cost      float64
	stamp     int64
	okN, allN float64
	// Outlier detection.
	fails int   // consecutive failures
	mult  int   // ejection multiplier (ejections in a row)
	back  int64 // when the last ejection ended

	picked, failures, ejections api.Counter
}

func (h *host) available(now int64) bool { return now >= h.ejectedUntil.Load() }

// hostSet is one version of the host list with the tables the strategy
// needs, built once per version.
type hostSet struct {
	hosts  []*host
	byAddr map[string]*host
	equal  bool      // all weights equal
	cum    []float64 // prefix sums of the weights (random)
	ring   []ringEntry
	table  []int32 // maglev
	wrr    *wrrState
}

type ringEntry struct {
	hash uint64
	host int32
}

// options are the balancer's settings, from the config.
type options struct {
	strategy       strategyKind
	choices        int
	bias           float64
	tau            float64 // peak-ewma decay, ns
	noPeak         bool    // experiment knob
	defaultLatency float64 // ns
	ringSize       int
	tableSize      int
	// outlier detection: consecutive failures (0 = off), ejection times (ns)
	consecutive int
	base, max   int64
}

type balancer struct {
	opts    options
	set     atomic.Pointer[hostSet]
	rr      atomic.Uint64
	metrics api.Metrics
	// rng, when set, replaces math/rand/v2's global source (deterministic
	// simulations; not safe for concurrent use then).
	rng *rand.Rand
	// onEject is told about each ejection (for the log).
	onEject func(h *host, d int64)
}

func newBalancer(o options, m api.Metrics) *balancer {
	b := &balancer{opts: o, metrics: m}
	b.rr.Store(rand.Uint64N(1 << 32)) // start anywhere: instances do not all start at host 0
	b.setHosts(nil, nil)
	return b
}

func (b *balancer) intn(n int) int {
	if b.rng != nil {
		return b.rng.IntN(n)
	}
	return rand.IntN(n)
}

func (b *balancer) float() float64 {
	if b.rng != nil {
		return b.rng.Float64()
	}
	return rand.Float64()
}

// setHosts installs a new host list (addresses with weights), keeping the
// state of hosts already known.
func (b *balancer) setHosts(addrs []string, weights []float64) {
	old := b.set.Load()
	s := &hostSet{byAddr: make(map[string]*host, len(addrs)), equal: true}
	for i, a := range addrs {
		w := weights[i]
		var h *host
		if old != nil {
			h = old.byAddr[a]
		}
		if h == nil { // a new address (weights of a known one never change: DNS hosts all weigh 1)
			h = &host{addr: a, weight: w}
			suffix := metricSuffix(a)
			h.picked = b.metrics.Counter("picked_" + suffix)
			h.failures = b.metrics.Counter("failures_" + suffix)
			h.ejections = b.metrics.Counter("ejections_" + suffix)
		}
		s.hosts = append(s.hosts, h)
		s.byAddr[a] = h
		if w != weights[0] {
			s.equal = false
		}
	}
	total := 0.0
	for _, h := range s.hosts {
		total += h.weight
		s.cum = append(s.cum, total)
	}
	switch b.opts.strategy {
	case kWeightedRoundRobin:
		s.wrr = &wrrState{cur: make([]float64, len(s.hosts))}
	case kRing:
		s.ring = buildRing(s.hosts, b.opts.ringSize)
	case kMaglev:
		s.table = buildMaglev(s.hosts, b.opts.tableSize)
	}
	b.set.Store(s)
}

// metricSuffix turns "127.0.0.1:9001" into "127_0_0_1_9001".
func metricSuffix(addr string) string {
	b := []byte(addr)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// pickResult says why pick returned no host.
type pickResult uint8

const (
	picked pickResult = iota
	noHosts
	allEjected
)

// pick chooses a host for a request at now and counts it active. key is the
// request's hash (consistent-hash), hasKey false when it has none.
func (b *balancer) pick(now int64, key uint64, hasKey bool) (*host, pickResult) {
	s := b.set.Load()
	if len(s.hosts) == 0 {
		return nil, noHosts
	}
	h := b.choose(s, now, key, hasKey)
	if h == nil {
		return nil, allEjected
	}
	h.active.Add(1)
	return h, picked
}

func (b *balancer) choose(s *hostSet, now int64, key uint64, hasKey bool) *host {
	switch b.opts.strategy {
	case kRoundRobin:
		return b.roundRobin(s, now)
	case kWeightedRoundRobin:
		if s.equal {
			return b.roundRobin(s, now)
		}
		return s.wrr.next(s, now)
	case kRandom:
		return s.scan(b.weightedIndex(s), now)
	case kRing, kMaglev:
		if !hasKey {
			return s.scan(b.weightedIndex(s), now)
		}
		if b.opts.strategy == kRing {
			return s.ringLookup(key, now)
		}
		return s.maglevLookup(key, now)
	default: // least-request, peak-ewma
		return b.p2c(s, now)
	}
}

// roundRobin takes the next host in turn; an ejected host's turn goes to the
// next turn, so the others share its traffic evenly.
func (b *balancer) roundRobin(s *hostSet, now int64) *host {
	n := uint64(len(s.hosts))
	for k := uint64(0); k < n; k++ {
		if h := s.hosts[b.rr.Add(1)%n]; h.available(now) {
			return h
		}
	}
	return nil
}

// scan returns the first available host from index start on.
func (s *hostSet) scan(start int, now int64) *host {
	n := len(s.hosts)
	for k := 0; k < n; k++ {
		if h := s.hosts[(start+k)%n]; h.available(now) {
			return h
		}
	}
	return nil
}

func (s *hostSet) anyAvailable(now int64) bool { return s.scan(0, now) != nil }

func (b *balancer) weightedIndex(s *hostSet) int {
	if s.equal {
		return b.intn(len(s.hosts))
	}
	r := b.float() * s.cum[len(s.cum)-1]
	return min(sort.SearchFloat64s(s.cum, r), len(s.hosts)-1)
}

// wrrState is nginx's smooth weighted round robin over the available hosts.
type wrrState struct {
	mu  sync.Mutex
	cur []float64
}

func (w *wrrState) next(s *hostSet, now int64) *host {
	w.mu.Lock()
	defer w.mu.Unlock()
	best, total := -1, 0.0
	for i, h := range s.hosts {
		if !h.available(now) {
			continue
		}
		w.cur[i] += h.weight
		total += h.weight
		if best < 0 || w.cur[i] > w.cur[best] {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	w.cur[best] -= total
	return s.hosts[best]
}

// p2c compares `choices` distinct random hosts (all of them when there are
// no more) and takes the lowest score: the power of two choices.
func (b *balancer) p2c(s *hostSet, now int64) *host {
	n := len(s.hosts)
	var best *host
	bestScore := 0.0
	consider := func(h *host) {
		if sc := b.score(s, h, now); best == nil || sc < bestScore {
			best, bestScore = h, sc
		}
	}
	if n <= b.opts.choices {
		start := b.intn(n) // a random start, so equal scores do not all pick host 0
		for k := 0; k < n; k++ {
			if h := s.hosts[(start+k)%n]; h.available(now) {
				consider(h)
			}
		}
		return best
	}
	var chosen [10]int
	for c := 0; c < b.opts.choices; c++ {
		i := b.intn(n)
		// The next index not chosen yet and available; at most n steps.
		k := 0
		for ; k < n; k++ {
			if !slices.Contains(chosen[:c], i) && s.hosts[i].available(now) {
				break
			}
			i = (i + 1) % n
		}
		if k == n {
			break // fewer than `choices` hosts available
		}
		chosen[c] = i
		consider(s.hosts[i])
	}
	return best
}

// score is the load of a host; lower is better.
//
//	least-request: (active+1)^bias / weight
//	peak-ewma:     latency * (active+1)^bias / success rate / weight  (MOSN's score)
func (b *balancer) score(s *hostSet, h *host, now int64) float64 {
	load := float64(h.active.Load()) + 1
	if b.opts.bias != 1 {
		load = math.Pow(load, b.opts.bias)
	}
	if b.opts.strategy != kPeakEWMA {
		return load / h.weight
	}
	lat, succ, ok := h.estimate(now, b.opts.tau)
	if !ok {
		lat = b.fallbackLatency(s, now)
	}
	return lat * load / succ / h.weight
}

// minSuccessRate floors the success rate, as MOSN does (a host that fails
// everything scores 10x its latency, not infinity).
const minSuccessRate = 0.1

// estimate is the host's latency (ns) and success rate at now, false when it
// has no sample yet. Both decay with the time since the last sample (a host
// that gets no responses is probed again, as in Finagle and Linkerd).
func (h *host) estimate(now int64, tau float64) (lat, succ float64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.sampled {
		return 0, 1, false
	}
	d := decay(now-h.stamp, tau)
	succ = (h.okN*d + 1) / (h.allN*d + 1)
	return h.cost * d, max(succ, minSuccessRate), true
}

func decay(dt int64, tau float64) float64 {
	if dt <= 0 {
		return 1
	}
	return math.Exp(-float64(dt) / tau)
}

// fallbackLatency scores a host without samples: the average of the hosts
// that have some (MOSN uses the cluster's average), else the configured
// default.
func (b *balancer) fallbackLatency(s *hostSet, now int64) float64 {
	sum, n := 0.0, 0
	for _, h := range s.hosts {
		if lat, _, ok := h.estimate(now, b.opts.tau); ok {
			sum += lat
			n++
		}
	}
	if n == 0 {
		return b.opts.defaultLatency
	}
	return sum / float64(n)
}

// release ends a request picked on h.
func (b *balancer) release(h *host) { h.active.Add(-1) }

// feedback records what a response said about its host: latency (ns from
// the pick to the response) and outcome.
func (b *balancer) feedback(h *host, now int64, latency int64, out outcome) {
	if out == neutral {
		return
	}
	if out == failure {
		h.failures.Inc(1)
	}
	ewma := b.opts.strategy == kPeakEWMA
	outlier := b.opts.consecutive > 0 && out != latencyOnly
	if !ewma && !outlier {
		return
	}
	var ejected int64
	h.mu.Lock()
	if ewma {
		h.observe(now, float64(latency), out, b.opts.tau, b.opts.noPeak)
	}
	if outlier {
		ejected = b.outlier(h, now, out)
	}
	h.mu.Unlock()
	if ejected > 0 {
		h.ejections.Inc(1)
		if b.onEject != nil {
			b.onEject(h, ejected)
		}
	}
}

// observe adds a sample to the peak EWMA (h.mu held): a latency above the
// estimate replaces it at once (the "peak"), a lower one pulls it down with
// the weight of the time since the previous sample (time constant tau).
func (h *host) observe(now int64, lat float64, out outcome, tau float64, noPeak bool) {
	if !h.sampled {
		h.sampled, h.cost, h.stamp = true, lat, now
		if out != latencyOnly {
			h.allN = 1
			if out == success {
				h.okN = 1
			}
		}
		return
	}
	w := decay(now-h.stamp, tau)
	if lat > h.cost && !noPeak {
		h.cost = lat
	} else {
		h.cost = h.cost*w + lat*(1-w)
	}
	h.okN *= w
	h.allN *= w
	if out != latencyOnly {
		h.allN++
		if out == success {
			h.okN++
		}
	}
	if now > h.stamp {
		h.stamp = now
	}
}

// outlier applies a response to the host's ejection state (h.mu held) and
// returns the ejection's length when it ejects the host.
func (b *balancer) outlier(h *host, now int64, out outcome) int64 {
	if out == success {
		h.fails = 0
		return 0
	}
	if !h.available(now) {
		return 0 // a request that was in flight when the host was ejected
	}
	h.fails++
	if h.fails < b.opts.consecutive {
		return 0
	}
	// Each base_ejection_time the host stayed back takes one off the
	// multiplier (Envoy decrements it every interval a host is healthy).
	if h.mult > 0 && h.back > 0 {
		h.mult = max(0, h.mult-int((now-h.back)/b.opts.base))
	}
	h.mult++
	d := b.opts.base * int64(h.mult)
	if d > b.opts.max || d < 0 {
		d = b.opts.max
	}
	h.fails = 0
	h.back = now + d
	h.ejectedUntil.Store(now + d)
	return d
}
