// Package fakeenvoy is a fake Envoy for unit tests of moe plugins and of the
// framework. It implements the Envoy Go SDK interfaces (FilterCallbackHandler,
// header maps, buffers, stream info, metric callbacks, logging) and drives a
// real api.StreamFilter through a request the way Envoy's golang filter does:
// header/data/trailer phases, StopAndBuffer, async Running + Continue from
// goroutines, local replies that go through the encoder path, the access log
// and OnDestroy, client aborts.
//
// It is strict where Envoy is: calling the SDK on a stream that is not
// "processing in Go", or after OnDestroy, is recorded in Result.Violations (and
// panics like the SDK does). Framework tests assert that list stays empty.
// Everything is safe under -race.
package fakeenvoy

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/metrics"
)

// ---- process-wide fakes: logging and metrics ----

type logSink struct {
	mu    sync.Mutex
	lines []string // the latest lines (older ones are dropped)
	total uint64   // lines ever logged: the last of lines is line total-1
	level atomic.Int32
}

func (l *logSink) Log(level envoy.LogType, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) > 10000 {
		l.lines = l.lines[5000:]
	}
	l.lines = append(l.lines, "["+level.String()+"] "+msg)
	l.total++
}
func (l *logSink) LogLevel() envoy.LogType { return envoy.LogType(l.level.Load()) }

// The fake logger and stat store are process globals because Envoy's are:
// envoy.SetCommonCAPI is global in the SDK.
var (
	logs  = &logSink{}
	Stats = &StatStore{m: map[string]*Metric{}}
)

func init() {
	logs.level.Store(int32(envoy.Info))
	envoy.SetCommonCAPI(logs)
	metrics.Bind(Stats)
}

// SetLogLevel changes the fake Envoy log level.
func SetLogLevel(l envoy.LogType) { logs.level.Store(int32(l)) }

// LogMark is a position in the fake Envoy's log. The log is one per process
// (like Envoy's), so a test takes a mark before the requests it checks and
// reads the lines after it: lines of earlier tests, or of earlier runs under
// -count, are not its own.
type LogMark uint64

// MarkLogs returns the position after the last line logged so far.
func MarkLogs() LogMark {
	logs.mu.Lock()
	defer logs.mu.Unlock()
	return LogMark(logs.total)
}

// LogsSince returns the lines logged after m that contain substr. The log keeps the latest
// 5000 to 10000 lines, so a test that logs more than 5000 after its mark may miss the first
// of them.
func LogsSince(m LogMark, substr string) []string {
	logs.mu.Lock()
	defer logs.mu.Unlock()
	first := logs.total - uint64(len(logs.lines)) // the number of lines[0]
	var out []string
	for i, l := range logs.lines {
		if first+uint64(i) >= uint64(m) && strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

// Metric is a fake Envoy counter or gauge.
type Metric struct {
	name  string
	gauge bool
	v     atomic.Int64
}

func (m *Metric) Increment(off int64) {
	if !m.gauge && off <= 0 {
		return
	}
	m.v.Add(off)
}
func (m *Metric) Get() uint64 { return uint64(m.v.Load()) }
func (m *Metric) Record(v uint64) {
	if m.gauge {
		m.v.Store(int64(v))
	} else {
		m.v.Add(int64(v))
	}
}

// StatStore is a fake envoy.ConfigCallbackHandler (metric definition).
type StatStore struct {
	mu sync.Mutex
	m  map[string]*Metric
}

func (s *StatStore) define(name string, gauge bool) *Metric {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := name
	if gauge {
		key = "gauge:" + name
	}
	m, ok := s.m[key]
	if !ok {
		m = &Metric{name: name, gauge: gauge}
		s.m[key] = m
	}
	return m
}

func (s *StatStore) DefineCounterMetric(name string) envoy.CounterMetric {
	return s.define(name, false)
}
func (s *StatStore) DefineGaugeMetric(name string) envoy.GaugeMetric { return s.define(name, true) }

// Counter returns a counter's value (0 if undefined), after writing the
// batched updates (metrics.Flush).
func (s *StatStore) Counter(name string) uint64 {
	metrics.Flush()
	s.mu.Lock()
	m := s.m[name]
	s.mu.Unlock()
	if m == nil {
		return 0
	}
	return m.Get()
}

// Gauge returns a gauge's value, after writing the batched updates.
func (s *StatStore) Gauge(name string) uint64 {
	metrics.Flush()
	s.mu.Lock()
	m := s.m["gauge:"+name]
	s.mu.Unlock()
	if m == nil {
		return 0
	}
	return m.Get()
}

// Names lists defined metrics.
func (s *StatStore) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---- config helpers ----

// Parser is Envoy's view of a golang filter config parser.
type Parser = envoy.StreamFilterConfigParser

// ParseFilter parses a filter-level config given as JSON (wrapped in a
// TypedStruct like Envoy would) with metric callbacks, as Envoy does.
func ParseFilter(p Parser, jsonText string) (any, error) {
	a, err := typedStruct(jsonText)
	if err != nil {
		return nil, err
	}
	return p.Parse(a, Stats)
}

// ParseRoute parses a per-route config (Envoy passes no callbacks).
func ParseRoute(p Parser, jsonText string) (any, error) {
	a, err := typedStruct(jsonText)
	if err != nil {
		return nil, err
	}
	return p.Parse(a, nil)
}

func typedStruct(jsonText string) (*anypb.Any, error) {
	if strings.TrimSpace(jsonText) == "" {
		jsonText = "{}"
	}
	a, err := config.TypedStruct(jsonText)
	if err != nil {
		return nil, fmt.Errorf("fakeenvoy: bad test JSON: %w", err)
	}
	return a, nil
}
