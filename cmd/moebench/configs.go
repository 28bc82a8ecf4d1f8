package main

import "github.com/moeproxy/moe/shared/testing/hosttest"

// Config is one measured configuration: a bootstrap under envoy/bench/ (shaped like the
// examples: listener 10000, admin 9901, upstream 8080, library_path out/<library>), what the
// client sends, and what the bootstrap needs besides the echo upstream.
type Config struct {
	ID   string // "B0"
	Name string // short label for tables and the chart
	File string // bootstrap, relative to the repository root
	// Library is the plugin library under out/ the bootstrap loads (hosttest.NoLibrary: none).
	Library string
	// Headers are sent with every request: the valid API key of the chains, to every config
	// (the baselines too), so that all configurations parse, copy and forward the same request
	// and the differences between them are what their filters cost, not one more header the
	// baselines never saw (~5.8k instructions a request in moe-host, measured 2026-12-01).
	Headers map[string]string
	// Auth: the chain refuses a request without the key (401); the smoke test checks it, so
	// the benchmark is known to measure the authenticated path.
	Auth bool
	// Redis: "127.0.0.1:6379" in the file is replaced by a redis-server the bench starts.
	Redis bool
	// OTLP: the exporter endpoint in the file is replaced by the bench's loopback receiver.
	OTLP bool
	// AccessLog: the access-log path in the file is replaced by a file in a temporary directory.
	AccessLog bool
	// MustNotMove are counters that must not grow while a config is measured: a failure the
	// client cannot see (a Redis error under fail_open, a dropped span or log line) would make
	// the figure that of a different path.
	MustNotMove []string
	// Note qualifies what is measured (printed under the table).
	Note string
}

// Every request of the benchmark: a small text body answered by the echo upstream.
const (
	requestPath  = "/bench?body=hello"
	responseBody = "hello"
)

// Literal text of the bootstraps the bench replaces (see Config).
const (
	fileRedisAddr = "127.0.0.1:6379"
	fileOTLPURL   = "http://127.0.0.1:4318/v1/traces"
	fileAccessLog = "/tmp/moe-bench/access.log"
)

var clientKey = map[string]string{"x-api-key": "bench-client-key-0001"}

// configs are B0..B6 in report order, with B1K beside B1. B0 and B1 are the baselines every
// ratio is against.
var configs = []Config{
	{ID: "B0", Name: "router only", File: "envoy/bench/b0-router.yaml", Library: hosttest.NoLibrary, Headers: clientKey},
	{ID: "B1", Name: "SDK pass-through", File: "envoy/bench/b1-sdk-passthrough.yaml", Library: "libconformance.so", Headers: clientKey},
	{ID: "B1K", Name: "key-auth work, bare SDK", File: "envoy/bench/b1k-sdk-key-auth.yaml", Library: "libconformance.so", Headers: clientKey, Auth: true,
		Note: "B1K makes B2's calls with the bare SDK (reads x-api-key, sets x-consumer-name and the moe.consumer filter state): " +
			"B2 minus B1K is what moe adds over a hand-written filter doing the same work."},
	{ID: "B2", Name: "moe key-auth", File: "envoy/bench/b2-key-auth.yaml", Headers: clientKey, Auth: true},
	{ID: "B3", Name: "5-plugin chain", File: "envoy/bench/b3-chain.yaml", Headers: clientKey, Auth: true},
	{ID: "B4", Name: "5 separate filters", File: "envoy/bench/b4-separate-filters.yaml", Headers: clientKey, Auth: true},
	{ID: "B5", Name: "chain, request async", File: "envoy/bench/b5-chain-async.yaml", Headers: clientKey, Auth: true,
		Note: "B5 is B3 with its request phase in a goroutine (limit-req max_delay declares MayBlock; no request waits). " +
			"moe has no knob that forces every phase async: the response phase (sentinel's Append) stays on the worker thread, " +
			"so \"every phase async\" is not measured."},
	{ID: "B6", Name: "gateway chain", File: "envoy/bench/b6-gateway.yaml", Headers: clientKey, Auth: true, Redis: true, OTLP: true, AccessLog: true,
		MustNotMove: []string{"moe_limit_count_redis_errors", "moe_limit_count_failure_passed", "moe_trace_spans_dropped",
			"moe_trace_spans_failed", "moe_access_log_dropped", "moe_access_log_write_failed"},
		Note: "B6: trace samples every request and exports spans to a loopback OTLP/HTTP receiver started by the bench; " +
			"limit-count makes one call per request to a redis-server started by the bench (request phase async); access-log writes to a file."},
}

// configByID returns the config with that id.
func configByID(id string) (Config, bool) {
	for _, c := range configs {
		if c.ID == id {
			return c, true
		}
	}
	return Config{}, false
}
