package metrics_test

import (
	"fmt"
	"testing"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
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
