package hostbalance

import (
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// parse decodes, validates and initialises a config as the framework does.
func parse(t testing.TB, js string) (*Config, *fakeframework.Env) {
	t.Helper()
	c, env := fakeframework.MustParse[*Config](t, Name, newConfig, js)
	t.Cleanup(c.Destroy)
	return c, env
}

// nopMetrics is an api.Metrics that counts nothing (simulations).
type nopMetrics struct{}

type nopCounter struct{}

func (nopCounter) Inc(uint64) {}

type nopGauge struct{}

func (nopGauge) Add(int64)   {}
func (nopGauge) Set(uint64)  {}
func (nopGauge) Get() uint64 { return 0 }

type nopHistogram struct{}

func (nopHistogram) Record(uint64) {}

func (nopMetrics) Counter(string) api.Counter               { return nopCounter{} }
func (nopMetrics) Gauge(string) api.Gauge                   { return nopGauge{} }
func (nopMetrics) Histogram(string, []uint64) api.Histogram { return nopHistogram{} }
