package auditlog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// records are the audit records in text (lines holding a JSON object with a
// "decision").
func records(t *testing.T, text string) []Record {
	var out []Record
	for _, l := range strings.Split(text, "\n") {
		if i := strings.Index(l, `{"time":`); i >= 0 && strings.Contains(l, `"decision":`) {
			out = append(out, decode(t, l[i:]))
		}
	}
	return out
}

// The documented example through moe-host: key-auth and limit-req decide,
// the framework reports it, and the records on stdout say who decided and why,
// with credentials masked.
func TestE2EExample(t *testing.T) {
	h := hosttest.StartExample(t, "envoy/examples/audit-log.yaml")
	key := "alice-key-2026-a"
	steps := []struct {
		path   string
		hdr    []string
		status int
	}{
		{"/orders", []string{"x-api-key", key, "x-tenant", "t1"}, 200},
		{"/orders", nil, 401},
		{"/orders?token=abc&id=7&zone=eu", []string{"x-api-key", key}, 200},
		{"/orders", []string{"x-api-key", key}, 429},
	}
	for i, s := range steps {
		if resp, _ := hosttest.Get(t, h.URL+s.path, s.hdr...); resp.StatusCode != s.status {
			t.Fatalf("step %d %s: %d, want %d", i, s.path, resp.StatusCode, s.status)
		}
	}
	tb.Eventually(t, "4 records", func() bool { return len(records(t, h.Output())) >= 4 })
	rs := records(t, h.Output())
	if len(rs) != 4 {
		t.Fatalf("%d records", len(rs))
	}
	ok := rs[0]
	if ok.WhoRaw["consumer"] != "alice" || ok.WhoRaw["source_ip"] != "127.0.0.1" || ok.What["route"] != "orders" || ok.What["cluster"] != "upstream" ||
		ok.Decision["by"] != "key-auth" || ok.Decision["allowed"] != true || ok.Status != 200 || ok.Details != "via_upstream" ||
		ok.Headers["x-api-key"] != "***" || ok.Headers["x-tenant"] != "t1" || ok.RequestID == "" || ok.LatencyMS <= 0 {
		t.Errorf("allowed: %+v", ok)
	}
	if r := rs[1]; r.Decision["allowed"] != false || r.Decision["by"] != "key-auth" || r.Status != 401 || r.Details != "moe_reply{key-auth}" {
		t.Errorf("refused: %+v", r)
	}
	if r := rs[2]; r.What["path"] != "/orders?token=***&id=7&zone=eu" || r.Fields["tenant_zone"] != "eu" {
		t.Errorf("masked path: %+v", r)
	}
	if r := rs[3]; r.Decision["by"] != "limit-req" || r.Decision["status"] != float64(429) || r.WhoRaw["consumer"] != "alice" {
		t.Errorf("limited: %+v", r)
	}
	if strings.Contains(h.Output(), key) {
		t.Error("the API key reached the output")
	}
	if got := h.Counter(t, "moe_audit_log_denied_requests"); got != 2 {
		t.Errorf("denied_requests = %d", got)
	}
}

// The HTTP sink through moe-host: records reach a loopback collector; with
// the collector down, requests are not held up (Log only queues) and the
// lost records are counted.
func TestE2EHTTPSink(t *testing.T) {
	col := newCollector(t, 200, nil)
	down := fmt.Sprintf("http://127.0.0.1:%d/audit", hosttest.ClosedPort(t))
	sink := func(url string) hosttest.Plugin {
		return hosttest.Plugin{Name: Name, Config: map[string]any{
			"sink": map[string]any{"type": "http", "url": url, "timeout": "500ms", "batch_interval": "20ms", "headers": map[string]string{"authorization": "Bearer tok"}},
		}}
	}
	h := hosttest.StartChain(t, hosttest.Chain{Plugins: []hosttest.Plugin{sink(col.srv.URL + "/audit")}})
	for i := 0; i < 20; i++ {
		if resp, _ := hosttest.Get(t, fmt.Sprintf("%s/up/%d", h.URL, i)); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	tb.Eventually(t, "20 records at the collector", func() bool { _, recs, _ := col.snapshot(); return len(recs) == 20 })
	_, recs, hdrs := col.snapshot()
	if r := decode(t, recs[0]); r.What["path"] != "/up/0" || r.Status != 200 || hdrs[0].Get("authorization") != "Bearer tok" {
		t.Fatalf("record %s, headers %v", recs[0], hdrs[0])
	}

	hd := hosttest.StartChain(t, hosttest.Chain{Plugins: []hosttest.Plugin{sink(down)}})
	start := time.Now()
	for i := 0; i < 50; i++ {
		if resp, _ := hosttest.Get(t, hd.URL+"/down"); resp.StatusCode != 200 {
			t.Fatalf("with the collector down: %d", resp.StatusCode)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("50 requests took %v with the collector down", d)
	}
	tb.Eventually(t, "failed records counted", func() bool { return hd.Counter(t, "moe_audit_log_failed") == 50 })
}
