package sentinel

import (
	"testing"

	sconfig "github.com/alibaba/sentinel-golang/core/config"
	"github.com/alibaba/sentinel-golang/logging"
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
}
