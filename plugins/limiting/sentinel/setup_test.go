package sentinel

import (
	"syscall"
	"testing"
	"time"

	sconfig "github.com/alibaba/sentinel-golang/core/config"
	"github.com/alibaba/sentinel-golang/logging"
	"github.com/alibaba/sentinel-golang/util"
)

func TestSentinelIsInitializedToWriteNothingToDisk(t *testing.T) {
	if err := initSentinel(); err != nil {
		t.Fatal(err)
	}
	if _, ok := sconfig.Logger().(quietLogger); !ok {
		t.Errorf("sentinel logger = %T: sentinel would open a log file under %s", sconfig.Logger(), sconfig.LogBaseDir())
	}
	if _, ok := logging.GetGlobalLogger().(quietLogger); !ok {
		t.Errorf("global sentinel logger = %T", logging.GetGlobalLogger())
	}
	if n := sconfig.MetricLogFlushIntervalSec(); n != 0 {
		t.Errorf("metric log flush interval = %d: the metric log writer would write files", n)
	}
	if a := sconfig.MetricExportHTTPAddr(); a != "" {
		t.Errorf("metric exporter listens on %q", a)
	}
	if c, ok := util.CurrentClock().(*monotonicClock); !ok {
		t.Errorf("sentinel's clock is %T, not the monotonic clock", c)
	}
}

// Nothing of sentinel runs between requests: no cached-time ticker, no metric
// writer, no collectors without system rules. The test binary's CPU time over
// an idle second stays far below what a 1 ms ticker burns (12-17 ms per second
// on this machine, more when it is loaded).
func TestIdleSentinelUsesNoCPU(t *testing.T) {
	c, _ := load(t, `{"namespace":"idle-cpu","flow":[{"threshold":1e12}],"isolation":[{"max_concurrency":100}],"circuit_breakers":[{"strategy":"error_ratio","threshold":0.5}]}`)
	ctx := newCtx("r")
	for range 100 {
		f := &filter{rt: c.rt}
		f.OnReceive(ctx, ctx.Req, nil, nil)
		f.Append(ctx, resp(200), nil, nil)
		f.OnDestroy()
	}
	time.Sleep(100 * time.Millisecond) // let what the requests started settle
	// The process's CPU counts everything in the test binary (GC, the race detector, other
	// packages' goroutines); the least of three idle seconds keeps a loaded machine's noise
	// out, while a ticker like sentinel-golang's 1 ms clock costs every second (27 ms here).
	least := time.Hour
	for range 3 {
		before := processCPU(t)
		time.Sleep(time.Second)
		least = min(least, processCPU(t)-before)
	}
	if least > 8*time.Millisecond {
		t.Errorf("%v of CPU in the quietest of three idle seconds", least)
	}
}

func processCPU(t *testing.T) time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		t.Fatal(err)
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
