package sentinel

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	sconfig "github.com/alibaba/sentinel-golang/core/config"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/system"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

const checkedConfig = `{"namespace":"checked","flow":[{"threshold":5}],"isolation":[{"max_concurrency":2}],
	"circuit_breakers":[{"strategy":"error_ratio","threshold":0.5}],"hotspot":[{"key":"$header_x-user","threshold":1}],
	"system":[{"metric":"concurrency","threshold":100}],"pressure_test":{"flow":[{"threshold":1}]}}`

// childEnv marks the test binary started by TestCheckOnlyTouchesNoSentinelState.
const childEnv = "MOE_SENTINEL_CHECKONLY_CHILD"

// Checked only (moectl validate), a config with every kind of rule leaves sentinel as it
// was: not initialised, no system collector, no rule loaded, no namespace in the manager,
// no logger or breaker metrics bound. Sentinel's setup is once per process, so this runs
// in a fresh process (this test binary, started again) where nothing set it up before.
func TestCheckOnlyTouchesNoSentinelState(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		checkTouchesNothing(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckOnlyTouchesNoSentinelState$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCheckOnlyTouchesNoSentinelState") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func checkTouchesNothing(t *testing.T) {
	if mgr.spaces == nil || len(mgr.spaces) != 0 || sconfig.AppName() == "moe" {
		t.Fatal("sentinel was set up before the check: the test proves nothing")
	}
	var c *Config
	fakeframework.StartsNoGoroutine(t, func() {
		var err error
		if c, _, err = fakeframework.Check[*Config](t, "sentinel", newConfig, checkedConfig, false); err != nil {
			t.Fatal(err)
		}
	})
	defer c.Destroy()
	if got := sconfig.AppName(); got == "moe" {
		t.Error("sentinel was initialised")
	}
	if len(mgr.spaces) != 0 {
		t.Errorf("the rule manager has namespaces %v", mgr.spaces)
	}
	if n := len(flow.GetRules()) + len(system.GetRules()); n != 0 {
		t.Errorf("%d rules loaded into sentinel", n)
	}
	if logger.l.Load() != nil || breakerMetrics.open != nil {
		t.Error("the process-wide logger or breaker metrics were bound")
	}
	// The converse, in the same process: for real, the namespace is registered.
	real, _ := load(t, checkedConfig)
	if mgr.spaces["checked"] == nil || real.rt.space == nil || sconfig.AppName() != "moe" {
		t.Error("the real Init registered nothing: the test proves nothing")
	}
}

// Every rule is built as sentinel gets it and checked with sentinel's own validators,
// for real and when checking: a window of 2^32 ms is a valid duration, but sentinel's
// millisecond fields are 32 bits and read it as 0.
func TestSentinelValidatorsRefuseRules(t *testing.T) {
	for _, tc := range []struct{ raw, field, reason string }{
		{`{"circuit_breakers":[{"strategy":"error_count","threshold":3,"retry_timeout":"4294967296ms"}]}`, "circuit_breakers[0]", "invalid RetryTimeoutMs"},
		{`{"pressure_test":{"circuit_breakers":[{"strategy":"error_ratio","threshold":0.5,"stat_interval":"4294967296ms"}]}}`, "pressure_test.circuit_breakers[0]", "invalid StatIntervalMs"},
	} {
		fakeframework.WantCheckError(t, "sentinel", tc.raw, tc.field, "sentinel refuses the rule: "+tc.reason)
		fakeframework.WantConfigError(t, "sentinel", tc.raw, tc.field, "sentinel refuses the rule: "+tc.reason)
	}
	// Rules built in Go skip Validate's bounds: sentinel's validators still see them.
	c := newConfig().(*Config)
	if err := config.DecodeStrict([]byte(`{"isolation":[{"max_concurrency":1}],"system":[{"metric":"load","threshold":1}]}`), c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Isolation[0].MaxConcurrency = 0
	env := fakeframework.NewEnv("sentinel", false)
	env.Checking = true
	err := c.Init(env)
	if fe, ok := err.(*api.FieldError); !ok || fe.Field != "isolation[0]" || !strings.Contains(fe.Reason, "zero threshold") {
		t.Fatalf("got %v", err)
	}
	c.Isolation[0].MaxConcurrency = 1
	c.System[0].Threshold = -1
	err = c.Init(env)
	if fe, ok := err.(*api.FieldError); !ok || fe.Field != "system[0]" || !strings.Contains(fe.Reason, "negative threshold") {
		t.Fatalf("got %v", err)
	}
}

// The errors Validate reports are reported when checking too.
func TestCheckOnlyReportsConfigErrors(t *testing.T) {
	fakeframework.WantCheckError(t, "sentinel", `{"flow":[{"threshold":0}]}`, "flow[0].threshold", "must be > 0")
	fakeframework.WantCheckError(t, "sentinel", `{"namespace":"a/b"}`, "namespace", "must not contain")
}
