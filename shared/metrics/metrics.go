// Package metrics gives plugins counters, gauges and histograms backed by
// Envoy's metric API (the golang filter's DefineCounterMetric/DefineGaugeMetric).
//
// Envoy hands metric callbacks only to a filter-level config parse, bound to that
// config's lifetime. Plugins, however, define metrics in per-route configs too
// and keep them across config versions. So each metric is a Go handle, keyed by
// its full name, that forwards to the Envoy metric of the most recently parsed
// filter config (Bind). Envoy's stat store is keyed by name as well, so values
// survive a rebind.
//
// Updates are batched: Inc, Add and Set change a Go atomic and queue the metric;
// a flusher writes every changed metric to Envoy at most FlushInterval later, in
// one C call per metric instead of one per update (a request of the standard
// chain made seven such calls). Gauges are authoritative in Go (the flusher
// records their value), so Get never crosses into C. While nothing changes the
// flusher is parked: an idle moe costs no CPU. /stats therefore lags the
// requests by up to FlushInterval (100ms, MOE_METRICS_FLUSH_INTERVAL).
package metrics

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/api"
)

// Definer is the part of Envoy's api.ConfigCallbackHandler we use.
type Definer interface {
	DefineCounterMetric(name string) envoy.CounterMetric
	DefineGaugeMetric(name string) envoy.GaugeMetric
}

// FlushIntervalEnv overrides the default flush interval (a Go duration). "0"
// writes every update at once, unbatched: test hosts use it so that /stats read
// right after a request already shows what the request counted.
const FlushIntervalEnv = "MOE_METRICS_FLUSH_INTERVAL"

// flushInterval is how long an update may wait before it reaches Envoy
// (nanoseconds; atomic because tests change it while the flusher reads it).
var flushInterval atomic.Int64

func init() { flushInterval.Store(int64(flushIntervalFromEnv())) }

// FlushInterval is how long an update may wait before it reaches Envoy.
func FlushInterval() time.Duration { return time.Duration(flushInterval.Load()) }

// SetFlushInterval changes the flush interval (0: unbatched) and returns the previous one.
func SetFlushInterval(d time.Duration) time.Duration {
	return time.Duration(flushInterval.Swap(int64(d)))
}

func flushIntervalFromEnv() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(FlushIntervalEnv)); err == nil && d >= 0 {
		return d
	}
	return 100 * time.Millisecond
}

// The metric table is global because Envoy's stat namespace is global to the
// process and plugin configs of many versions share metrics by name.
var (
	mu       sync.Mutex
	definer  Definer
	counters = map[string]*counter{}
	gauges   = map[string]*gauge{}
)

// Handles wrap the SDK's metric of one filter config. When Envoy drops that
// config (listener removed, config replaced), the SDK panics on use; the handle
// then marks itself dead and the metric keeps its value in Go until the next
// Bind, so a metric can never fail a request.
type counterHandle struct {
	m    envoy.CounterMetric
	dead atomic.Bool
}

type gaugeHandle struct {
	m    envoy.GaugeMetric
	dead atomic.Bool
}

func (h *counterHandle) inc(d int64) (ok bool) {
	if h == nil || h.dead.Load() {
		return false
	}
	defer func() {
		if recover() != nil {
			h.dead.Store(true)
			ok = false
		}
	}()
	h.m.Increment(d)
	return true
}

func (h *gaugeHandle) record(v uint64) (ok bool) {
	if h == nil || h.dead.Load() {
		return false
	}
	defer func() {
		if recover() != nil {
			h.dead.Store(true)
			ok = false
		}
	}()
	h.m.Record(v)
	return true
}

// counter: pending is what Envoy has not been told yet.
type counter struct {
	name    string
	h       atomic.Pointer[counterHandle]
	pending atomic.Uint64
	queued  atomic.Bool
}

func (c *counter) Inc(delta uint64) {
	if delta == 0 {
		return
	}
	c.pending.Add(delta)
	if !c.queued.Load() && c.queued.CompareAndSwap(false, true) {
		enqueue(c)
	}
}

// flush sends the pending delta; it stays pending while unbound (Bind sends it).
func (c *counter) flush() {
	c.queued.Store(false) // before the swap: a concurrent Inc queues again
	p := c.pending.Swap(0)
	if p > 0 && !c.h.Load().inc(int64(p)) {
		c.pending.Add(p)
	}
}

// gauge: value is the truth; Envoy gets it recorded on flush.
type gauge struct {
	name   string
	h      atomic.Pointer[gaugeHandle]
	value  atomic.Int64
	queued atomic.Bool
}

func (g *gauge) Add(delta int64) {
	g.value.Add(delta)
	g.changed()
}

func (g *gauge) Set(v uint64) {
	g.value.Store(int64(v))
	g.changed()
}

func (g *gauge) Get() uint64 { return uint64(g.value.Load()) }

func (g *gauge) changed() {
	if !g.queued.Load() && g.queued.CompareAndSwap(false, true) {
		enqueue(g)
	}
}

func (g *gauge) flush() {
	g.queued.Store(false)
	g.h.Load().record(uint64(g.value.Load()))
}

// Bind points every metric, present and future, at d (Envoy's callbacks of the
// latest filter-level config) and writes their values there. nil is ignored
// (route configs get no callbacks).
func Bind(d Definer) {
	if d == nil {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	definer = d
	for _, c := range counters {
		bindCounter(c)
	}
	for _, g := range gauges {
		bindGauge(g)
	}
}

func bindCounter(c *counter) {
	h := &counterHandle{}
	func() {
		defer func() {
			if recover() != nil {
				h.dead.Store(true)
			}
		}()
		h.m = definer.DefineCounterMetric(c.name)
	}()
	c.h.Store(h)
	c.flush()
}

func bindGauge(g *gauge) {
	h := &gaugeHandle{}
	func() {
		defer func() {
			if recover() != nil {
				h.dead.Store(true)
			}
		}()
		h.m = definer.DefineGaugeMetric(g.name)
	}()
	g.h.Store(h)
	g.flush()
}

// Counter returns the counter with this full name.
func Counter(name string) api.Counter {
	mu.Lock()
	defer mu.Unlock()
	c, ok := counters[name]
	if !ok {
		c = &counter{name: name}
		counters[name] = c
		if definer != nil {
			bindCounter(c)
		}
	}
	return c
}

// Gauge returns the gauge with this full name.
func Gauge(name string) api.Gauge {
	mu.Lock()
	defer mu.Unlock()
	g, ok := gauges[name]
	if !ok {
		g = &gauge{name: name}
		gauges[name] = g
		if definer != nil {
			bindGauge(g)
		}
	}
	return g
}

// DefaultBounds are histogram upper bounds suited to latencies in ms.
var DefaultBounds = []uint64{1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 10000}

type histogram struct {
	bounds  []uint64
	buckets []api.Counter // len(bounds)+1, last is +Inf
	sum     api.Counter
	count   api.Counter
}

func (h *histogram) Record(v uint64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.buckets[i].Inc(1)
	h.sum.Inc(v)
	h.count.Inc(1)
}

// Histogram returns a histogram exported as counters (Envoy's Go SDK cannot
// define histograms): name_bucket_le_<b> (non-cumulative), name_bucket_inf,
// name_sum, name_count.
func Histogram(name string, bounds []uint64) api.Histogram {
	if len(bounds) == 0 {
		bounds = DefaultBounds
	}
	h := &histogram{bounds: append([]uint64(nil), bounds...)}
	slices.Sort(h.bounds)
	h.bounds = slices.Compact(h.bounds)
	for _, b := range h.bounds {
		h.buckets = append(h.buckets, Counter(name+"_bucket_le_"+strconv.FormatUint(b, 10)))
	}
	h.buckets = append(h.buckets, Counter(name+"_bucket_inf"))
	h.sum = Counter(name + "_sum")
	h.count = Counter(name + "_count")
	return h
}

// Prefix is the metric name prefix of a plugin: moe_<plugin>_ with '-' as '_'.
func Prefix(plugin string) string {
	return "moe_" + strings.ReplaceAll(plugin, "-", "_") + "_"
}

// ForPlugin returns the api.Metrics of a plugin (names get Prefix(plugin)).
func ForPlugin(plugin string) api.Metrics { return pluginMetrics(Prefix(plugin)) }

type pluginMetrics string

func (p pluginMetrics) Counter(name string) api.Counter { return Counter(string(p) + name) }
func (p pluginMetrics) Gauge(name string) api.Gauge     { return Gauge(string(p) + name) }
func (p pluginMetrics) Histogram(name string, bounds []uint64) api.Histogram {
	return Histogram(string(p)+name, bounds)
}
