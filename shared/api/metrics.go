package api

// Metrics defines metrics at config time (ConfigEnv.Metrics). Names are
// prefixed with "moe_<plugin>_". Defining the same name twice returns the same
// metric. Metrics are safe for concurrent use and cheap to keep in the config.
type Metrics interface {
	Counter(name string) Counter
	Gauge(name string) Gauge
	// Histogram records values into buckets with the given upper bounds
	// (ascending; nil means a default latency-in-ms set). Envoy's Go SDK v1.39 has
	// no histogram definition, so a histogram is exported as counters:
	// <name>_bucket_le_<bound> (non-cumulative), <name>_bucket_inf, <name>_sum,
	// <name>_count.
	Histogram(name string, bounds []uint64) Histogram
}

type Counter interface {
	Inc(delta uint64)
}

type Gauge interface {
	Add(delta int64)
	Set(value uint64)
	Get() uint64
}

type Histogram interface {
	Record(value uint64)
}
