package sentinel

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/stat"
	metricexporter "github.com/alibaba/sentinel-golang/exporter/metric"

	"github.com/moeproxy/moe/shared/api"
)

// The plugin's stat slot counts passes, blocks and concurrency where
// sentinel's does (the limits depend on them), but leaves sentinel's
// Prometheus counter alone (slotchain.go).
func TestEntriesAreCountedWithoutSentinelsPrometheusCounter(t *testing.T) {
	c, _ := load(t, `{"namespace":"slots","flow":[{"threshold":2}]}`)
	admitted := count(c, 5, func() *fakeCtx { return newCtx("slots-r") })
	if admitted != 2 {
		t.Fatalf("admitted %d of 5, want 2", admitted)
	}
	name := c.rt.space.lookup([]byte("slots-r")).name
	node := stat.GetResourceNode(name)
	if node == nil {
		t.Fatalf("no statistics for %s", name)
	}
	// The five entries took far less than the node's one-second window.
	if p, b := node.GetSum(base.MetricEventPass), node.GetSum(base.MetricEventBlock); p != 2 || b != 3 {
		t.Errorf("recorded %d passes and %d blocks, want 2 and 3", p, b)
	}
	if n := node.CurrentConcurrency(); n != 0 {
		t.Errorf("concurrency %d after every entry exited, want 0", n)
	}
	rec := httptest.NewRecorder()
	metricexporter.HTTPHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "sentinel_go_handled_total{") && strings.Contains(line, name) {
			t.Errorf("sentinel's handled counter moved: %s", line)
		}
	}
}

// A namespace's slot chain comes with its rules: when a config with other
// rule kinds takes over an explicit namespace, the older config's requests
// are checked by the new kinds too (a chain built per config would skip the
// isolation slot here).
func TestSlotChainFollowsTheNamespacesRules(t *testing.T) {
	old, _ := load(t, `{"namespace":"takeover","flow":[{"threshold":1000}]}`)
	load(t, `{"namespace":"takeover","isolation":[{"max_concurrency":1}]}`)
	ctx := newCtx("r")
	first := &filter{rt: old.rt}
	if first.OnReceive(ctx, ctx.Req, nil, nil) != api.Continue {
		t.Fatal("first request blocked")
	}
	defer first.OnDestroy()
	r := request(old, newCtx("r"), 200, 0)
	if r == nil || r.Code != 429 {
		t.Fatalf("second concurrent request through the older config: %+v, want 429 from the new isolation rule", r)
	}
}
