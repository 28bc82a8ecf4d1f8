// Package metrics gives plugins counters, gauges and histograms backed by
// Envoy's metric API (the golang filter's DefineCounterMetric/DefineGaugeMetric).
//
// Envoy hands metric callbacks only to a filter-level config parse, bound to that
// config's lifetime. Plugins, however, define metrics in per-route configs too
// and keep them across config versions. So each metric is a Go handle, keyed by
// its full name, that forwards to the Envoy metric of the most recently parsed
// filter config (Bind). Envoy's stat store is keyed by name as well, so values
// survive a rebind. Counts recorded before the first Bind (unit tests, early
// init) are kept in Go and flushed on Bind.
package metrics

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/api"
)

// Definer is the part of Envoy's api.ConfigCallbackHandler we use.
type Definer interface {
	DefineCounterMetric(name string) envoy.CounterMetric
	DefineGaugeMetric(name string) envoy.GaugeMetric
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
// then marks itself dead and the metric keeps counting in Go until the next
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
	if h.dead.Load() {
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

func (h *gaugeHandle) call(fn func(envoy.GaugeMetric)) (ok bool) {
	if h.dead.Load() {
		return false
	}
	defer func() {
		if recover() != nil {
			h.dead.Store(true)
			ok = false
		}
	}()
	fn(h.m)
	return true
}

type counter struct {
	name    string
	h       atomic.Pointer[counterHandle]
	pending atomic.Uint64
}

func (c *counter) Inc(delta uint64) {
	if delta == 0 {
		return
	}
	if h := c.h.Load(); h != nil && h.inc(int64(delta)) {
		return
	}
	c.pending.Add(delta)
}

type gauge struct {
	name string
	h    atomic.Pointer[gaugeHandle]
	// local holds the value while unbound.
	local atomic.Int64
}

func (g *gauge) Add(delta int64) {
	if h := g.h.Load(); h != nil && h.call(func(m envoy.GaugeMetric) { m.Increment(delta) }) {
		return
	}
	g.local.Add(delta)
}

func (g *gauge) Set(v uint64) {
	if h := g.h.Load(); h != nil && h.call(func(m envoy.GaugeMetric) { m.Record(v) }) {
		return
	}
	g.local.Store(int64(v))
}

func (g *gauge) Get() uint64 {
	var v uint64
	if h := g.h.Load(); h != nil && h.call(func(m envoy.GaugeMetric) { v = m.Get() }) {
		return v
	}
	return uint64(g.local.Load())
}

// Bind points every metric, present and future, at d (Envoy's callbacks of the
// latest filter-level config). nil is ignored (route configs get no callbacks).
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
	if p := c.pending.Swap(0); p > 0 {
		c.Inc(p)
	}
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
	if v := g.local.Swap(0); v != 0 {
		g.Add(v)
	}
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
