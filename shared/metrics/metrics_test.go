package metrics_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// Metrics are process-global: each run uses its own names so -count=N works.
var run int

func uniq(name string) string {
	return fmt.Sprintf("%s%d", name, run)
}

func TestPluginMetricsArePrefixedAndReachEnvoy(t *testing.T) {
	run++
	m := metrics.ForPlugin(uniq("my-plugin"))
	p := metrics.Prefix(uniq("my-plugin"))
	m.Counter("hits_total").Inc(3)
	g := m.Gauge("inflight")
	g.Add(5)
	g.Add(-2)
	h := m.Histogram("latency_ms", []uint64{10, 100})
	h.Record(5)
	h.Record(50)
	h.Record(500)
	if v := fakeenvoy.Stats.Counter(p + "hits_total"); v != 3 {
		t.Errorf("counter %d", v)
	}
	if v := fakeenvoy.Stats.Gauge(p + "inflight"); v != 3 || g.Get() != 3 {
		t.Errorf("gauge %d", v)
	}
	for name, want := range map[string]uint64{
		p + "latency_ms_bucket_le_10":  1,
		p + "latency_ms_bucket_le_100": 1,
		p + "latency_ms_bucket_inf":    1,
		p + "latency_ms_sum":           555,
		p + "latency_ms_count":         3,
	} {
		if v := fakeenvoy.Stats.Counter(name); v != want {
			t.Errorf("%s = %d, want %d", name, v, want)
		}
	}
}

func TestMetricsDefinedBeforeBindAreKept(t *testing.T) {
	run++
	name := uniq("moe_test_early_total")
	c := metrics.Counter(name)
	c.Inc(2) // fakeenvoy bound already, still must count
	metrics.Bind(fakeenvoy.Stats)
	c.Inc(1)
	if v := fakeenvoy.Stats.Counter(name); v != 3 {
		t.Errorf("got %d", v)
	}
}

type goneDefiner struct{}

type goneMetric struct{}

func (goneMetric) Increment(int64) { panic("golang filter has been destroyed") }
func (goneMetric) Get() uint64     { panic("golang filter has been destroyed") }
func (goneMetric) Record(uint64)   { panic("golang filter has been destroyed") }

func (goneDefiner) DefineCounterMetric(string) envoy.CounterMetric { return goneMetric{} }
func (goneDefiner) DefineGaugeMetric(string) envoy.GaugeMetric     { return goneMetric{} }

func TestMetricsSurviveADroppedEnvoyConfig(t *testing.T) {
	run++
	cn, gn := uniq("moe_test_gone_total"), uniq("moe_test_gone_gauge")
	c := metrics.Counter(cn)
	g := metrics.Gauge(gn)
	metrics.Bind(goneDefiner{})
	c.Inc(2) // must not panic
	g.Add(4)
	if g.Get() != 4 {
		t.Errorf("gauge kept in Go: %d", g.Get())
	}
	metrics.Bind(fakeenvoy.Stats)
	c.Inc(1)
	if v := fakeenvoy.Stats.Counter(cn); v != 3 {
		t.Errorf("counter %d, want 3 (2 kept while unbound)", v)
	}
	if v := fakeenvoy.Stats.Gauge(gn); v != 4 {
		t.Errorf("gauge %d", v)
	}
}

// countingDefiner counts the calls that would cross into Envoy for the tests'
// own metrics (moe_test_*): the runtime gauges, sampled in the background
// while an earlier test's requests count as recent activity, are not counted.
type countingDefiner struct{ calls atomic.Int64 }

type countingMetric struct {
	d       *countingDefiner
	counted bool
	value   atomic.Int64
}

func (m *countingMetric) Increment(v int64) { m.count(); m.value.Add(v) }
func (m *countingMetric) Record(v uint64)   { m.count(); m.value.Store(int64(v)) }
func (m *countingMetric) Get() uint64       { panic("Get must not cross into Envoy") }
func (m *countingMetric) count() {
	if m.counted {
		m.d.calls.Add(1)
	}
}

func (d *countingDefiner) metric(name string) *countingMetric {
	return &countingMetric{d: d, counted: strings.HasPrefix(name, "moe_test_")}
}
func (d *countingDefiner) DefineCounterMetric(name string) envoy.CounterMetric { return d.metric(name) }
func (d *countingDefiner) DefineGaugeMetric(name string) envoy.GaugeMetric     { return d.metric(name) }

func TestUpdatesAreBatchedIntoOneCallPerMetric(t *testing.T) {
	run++
	d := &countingDefiner{}
	metrics.Bind(d)
	t.Cleanup(func() { metrics.Bind(fakeenvoy.Stats) })
	c := metrics.Counter(uniq("moe_test_batched_total"))
	g := metrics.Gauge(uniq("moe_test_batched_gauge"))
	metrics.Flush()
	before := d.calls.Load()
	for range 1000 {
		c.Inc(1)
		g.Add(1)
	}
	if g.Get() != 1000 {
		t.Errorf("gauge %d", g.Get())
	}
	metrics.Flush()
	if n := d.calls.Load() - before; n != 2 {
		t.Errorf("%d calls into Envoy for 2000 updates of 2 metrics, want 2", n)
	}
}

func TestFlusherWritesWithoutBeingAskedAndSleepsWhenIdle(t *testing.T) {
	run++
	d := &countingDefiner{}
	metrics.Bind(d)
	t.Cleanup(func() { metrics.Bind(fakeenvoy.Stats) })
	c := metrics.Counter(uniq("moe_test_auto_total"))
	metrics.Flush()
	before := d.calls.Load()
	c.Inc(5)
	tb.Eventually(t, fmt.Sprintf("a flush without Flush (interval %v)", metrics.FlushInterval()), func() bool {
		return d.calls.Load() != before
	})
	idle := d.calls.Load()
	time.Sleep(3 * metrics.FlushInterval())
	if n := d.calls.Load(); n != idle {
		t.Errorf("%d calls into Envoy while nothing changed", n-idle)
	}
}

func TestZeroIntervalWritesEachUpdateAtOnce(t *testing.T) {
	run++
	d := &countingDefiner{}
	metrics.Bind(d)
	saved := metrics.SetFlushInterval(0)
	t.Cleanup(func() { metrics.SetFlushInterval(saved); metrics.Bind(fakeenvoy.Stats) })
	c := metrics.Counter(uniq("moe_test_unbatched_total"))
	metrics.Flush()
	before := d.calls.Load()
	for range 3 {
		c.Inc(1)
	}
	if n := d.calls.Load() - before; n != 3 {
		t.Errorf("%d calls into Envoy for 3 unbatched updates, want 3 (none waiting for a flusher)", n)
	}
}
