package sentinel

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	sapi "github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	sconfig "github.com/alibaba/sentinel-golang/core/config"
	"github.com/alibaba/sentinel-golang/core/system_metric"
	"github.com/alibaba/sentinel-golang/logging"
	"github.com/alibaba/sentinel-golang/util"

	"github.com/moeproxy/moe/shared/api"
)

// logger forwards sentinel's warnings and errors, and the rule manager's, to
// Envoy's log: sentinel logs from its own goroutines, with no request or
// config at hand, so every Init hands over its env.Log() (all the same
// "sentinel" logger). Before the first Init lines are dropped.
var logger safeLogger

type loggerBox struct{ api.Logger }

// safeLogger drops a line instead of panicking when there is no Envoy to log to
// (sentinel's background goroutines racing process exit).
type safeLogger struct{ l atomic.Pointer[loggerBox] }

func (s *safeLogger) set(l api.Logger) { s.l.Store(&loggerBox{l}) }

func (s *safeLogger) Errorf(format string, args ...any) {
	defer func() { _ = recover() }()
	if b := s.l.Load(); b != nil {
		b.Errorf(format, args...)
	}
}

func (s *safeLogger) Warnf(format string, args ...any) {
	defer func() { _ = recover() }()
	if b := s.l.Load(); b != nil {
		b.Warnf(format, args...)
	}
}

// quietLogger is sentinel's logger: debug and info lines are dropped (sentinel
// logs every rule load at info), warnings and errors go to Envoy's log.
type quietLogger struct{}

func (quietLogger) Debug(string, ...interface{}) {}
func (quietLogger) DebugEnabled() bool           { return false }
func (quietLogger) Info(string, ...interface{})  {}
func (quietLogger) InfoEnabled() bool            { return false }
func (quietLogger) Warn(msg string, kv ...interface{}) {
	logger.Warnf("sentinel: %s%s", msg, kvString(kv))
}
func (quietLogger) WarnEnabled() bool { return true }
func (quietLogger) Error(err error, msg string, kv ...interface{}) {
	logger.Errorf("sentinel: %s: %v%s", msg, err, kvString(kv))
}
func (quietLogger) ErrorEnabled() bool { return true }

func kvString(kv []interface{}) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	return b.String()
}

func init() {
	// Before any rule load: sentinel's default logger writes to stdout.
	_ = logging.ResetGlobalLogger(quietLogger{})
	// Registered here, not later: sentinel's listener list is not locked, and
	// no breaker exists before the first config.
	circuitbreaker.RegisterStateChangeListeners(breakerListener{})
}

var (
	initOnce sync.Once
	initErr  error
)

// initSentinel starts sentinel once per process. Sentinel's defaults would
// write logs and metric files under ~/logs/csp; here logging goes to Envoy's
// log (Log.Logger set: sentinel then opens no log file), the metric log is off
// (FlushIntervalSec 0: no metric writer task, nothing on disk) and no metric
// HTTP exporter is started. Nothing runs while moe is idle: the system
// collectors (load, CPU) start with the first config that has system rules
// (startSystemCollectors), and sentinel reads its milliseconds from Go's
// monotonic clock (monotonicClock) instead of its always-on 1 ms ticker
// (UseCacheTime).
func initSentinel() error {
	initOnce.Do(func() {
		c := sconfig.NewDefaultConfig()
		c.Sentinel.App.Name = "moe"
		c.Sentinel.Log.Logger = quietLogger{}
		c.Sentinel.Log.Dir = ""
		c.Sentinel.Log.Metric.FlushIntervalSec = 0
		c.Sentinel.Exporter.Metric.HttpAddr = ""
		c.Sentinel.UseCacheTime = false
		c.Sentinel.Stat.System.CollectIntervalMs = 0
		c.Sentinel.Stat.System.CollectLoadIntervalMs = 0
		c.Sentinel.Stat.System.CollectCpuIntervalMs = 0
		c.Sentinel.Stat.System.CollectMemoryIntervalMs = 0
		util.SetClock(newMonotonicClock())
		initErr = sapi.InitWithConfig(c)
	})
	return initErr
}

// startSystemCollectors starts sentinel's load and CPU collectors (once per
// process, every second, as system rules need them) when a config with system
// rules first arrives; sentinel cannot stop them again.
func startSystemCollectors() {
	system_metric.InitLoadCollector(1000)
	system_metric.InitCpuCollector(1000)
}

// breakerListener counts circuit breaker transitions
// (moe_sentinel_breaker_to_open|half_open|closed) and logs them.
type breakerListener struct{}

var breakerMetrics struct {
	once                   sync.Once
	open, halfOpen, closed api.Counter
}

func bindBreakerMetrics(m api.Metrics) {
	breakerMetrics.once.Do(func() {
		breakerMetrics.open = m.Counter("breaker_to_open")
		breakerMetrics.halfOpen = m.Counter("breaker_to_half_open")
		breakerMetrics.closed = m.Counter("breaker_to_closed")
	})
}

func inc(c api.Counter) {
	if c != nil {
		c.Inc(1)
	}
}

func (breakerListener) OnTransformToClosed(prev circuitbreaker.State, r circuitbreaker.Rule) {
	inc(breakerMetrics.closed)
}

func (breakerListener) OnTransformToOpen(prev circuitbreaker.State, r circuitbreaker.Rule, snapshot interface{}) {
	inc(breakerMetrics.open)
	logger.Warnf("circuit breaker of %s opened (%s, was %v, snapshot %v)", r.Resource, r.Strategy, prev.String(), snapshot)
}

func (breakerListener) OnTransformToHalfOpen(prev circuitbreaker.State, r circuitbreaker.Rule) {
	inc(breakerMetrics.halfOpen)
}
