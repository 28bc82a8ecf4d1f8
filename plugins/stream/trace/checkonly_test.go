package trace

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// Checked only (moectl validate), a config with an exporter sets up no exporter or SDK
// pipeline and reaches no collector; for real, the pipeline's goroutines start.
func TestCheckOnlyStartsNoExporter(t *testing.T) {
	ln := fakeframework.NewListener(t)
	js := `{"exporter": {"endpoint": "http://` + ln.Addr() + `/v1/traces", "batch_timeout": "10ms"}}`
	pipelinesMu.Lock()
	n := len(pipelines)
	pipelinesMu.Unlock()
	var c *Config
	fakeframework.StartsNoGoroutine(t, func() {
		var err error
		if c, _, err = fakeframework.Check[*Config](t, Name, newConfig, js, false); err != nil {
			t.Fatal(err)
		}
	})
	pipelinesMu.Lock()
	m := len(pipelines)
	pipelinesMu.Unlock()
	if c.pipe != nil || m != n {
		t.Errorf("pipeline %v, %d pipelines (were %d)", c.pipe, m, n)
	}
	c.Destroy()
	ln.WantNoConnection(t, 0)

	fakeframework.StartsGoroutine(t, func() {
		real, _, err := fakeframework.Parse[*Config](t, Name, newConfig, js, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(real.Destroy)
	})
}
