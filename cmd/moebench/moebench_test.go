package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestParseWrk(t *testing.T) {
	r, err := parseWrk(readTestdata(t, "wrk.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := wrkResult{Requests: 44955, Seconds: 1, RPS: 44932.76, P50Us: 63, P99Us: 2860}
	if !near(r.Seconds, want.Seconds) || !near(r.P99Us, want.P99Us) || r.Requests != want.Requests ||
		!near(r.RPS, want.RPS) || !near(r.P50Us, want.P50Us) || r.Non2xx != 0 || r.SocketErrors != 0 {
		t.Errorf("got %+v, want %+v", r, want)
	}

	r, err = parseWrk(readTestdata(t, "wrk-errors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Non2xx != 50539 || r.SocketErrors != 5 || !near(r.P50Us, 1500) || !near(r.P99Us, 1.01e6) || !near(r.Seconds, 1.1) {
		t.Errorf("errors case: %+v", r)
	}
}

func TestParseWrkRefusesIncompleteOutput(t *testing.T) {
	full := readTestdata(t, "wrk.txt")
	for name, out := range map[string]string{
		"empty":      "",
		"no latency": strings.Replace(full, "     99%    2.86ms\n", "", 1),
		"no rps":     strings.Replace(full, "Requests/sec:", "Req:", 1),
		"no total":   strings.Replace(full, "44955 requests in", "44955 in", 1),
	} {
		if _, err := parseWrk(out); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseProcStatCPU(t *testing.T) {
	// The command name has spaces and parentheses: fields are counted after the last ')'.
	n, err := parseProcStatCPU(readTestdata(t, "proc-stat.txt"))
	if err != nil || n != 1534+287 {
		t.Fatalf("got %d, %v; want %d", n, err, 1534+287)
	}
	if _, err := parseProcStatCPU("123 (x) S 1 2"); err == nil {
		t.Error("short line: no error")
	}
}

func TestParseCallgrindTotal(t *testing.T) {
	head := readTestdata(t, "callgrind-head.txt")
	n, err := parseCallgrindTotal(strings.NewReader(head))
	if err != nil || n != 21536258 {
		t.Fatalf("summary: got %d, %v", n, err)
	}
	// Without a summary line, the totals line.
	noSummary := strings.Replace(head, "summary: 21536258\n", "", 1)
	if n, err := parseCallgrindTotal(strings.NewReader(noSummary)); err != nil || n != 21541020 {
		t.Errorf("totals: got %d, %v", n, err)
	}
	// Several events: the Ir column.
	multi := "events: Dr Ir Dw\nsummary: 5 700 9\n"
	if n, err := parseCallgrindTotal(strings.NewReader(multi)); err != nil || n != 700 {
		t.Errorf("multi: got %d, %v", n, err)
	}
	for name, in := range map[string]string{"empty": "", "no Ir": "events: Dr\nsummary: 5\n", "no value": "events: Ir\n"} {
		if _, err := parseCallgrindTotal(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseCallgrindCalls(t *testing.T) {
	// Shaped like a real profile: compressed names, defined once on fn= or cfn= and then
	// used by id, a recursion suffix, a call from a second caller, and a look-alike name.
	in := `events: Ir
fn=(1) runtime.gcBgMarkWorker
0 10
cfn=(2) runtime.gcMarkDone
calls=3 0
0 500
fn=(2)
cfn=(3) runtime.gcMarkTermination
calls=2 0
0 4000
fn=(4) runtime.mallocgc
cfn=(3)
calls=1 0
0 900
cfn=(5) runtime.gcMarkTermination'2
calls=4 0
0 10
cfn=(6) runtime.gcMarkTerminationX
calls=7 0
0 10
`
	n, err := parseCallgrindCalls(strings.NewReader(in), "runtime.gcMarkTermination")
	if err != nil || n != 7 {
		t.Fatalf("got %d, %v; want 7", n, err)
	}
	if n, err := parseCallgrindCalls(strings.NewReader(in), "runtime.absent"); err != nil || n != 0 {
		t.Errorf("absent: got %d, %v", n, err)
	}
	if _, err := parseCallgrindCalls(strings.NewReader("cfn=(1) f\ncalls=x 0\n"), "f"); err == nil {
		t.Error("bad calls line: no error")
	}
}

func TestCrossingsPerRequest(t *testing.T) {
	before := map[string]int64{"moe_host.capi.copy_headers": 10, "moe_host.go.on_http_header": 20, "moe_host.downstream_rq": 5}
	after := map[string]int64{"moe_host.capi.copy_headers": 30, "moe_host.go.on_http_header": 60,
		"moe_host.capi.finalize": 17, "moe_host.downstream_rq": 25, "moe_host.capi.log_level": 0}
	got := crossingsPerRequest(before, after, 20)
	want := map[string]float64{"moe_host.capi.copy_headers": 1, "moe_host.go.on_http_header": 2, "moe_host.capi.finalize": 0.85}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if !near(got[k], v) {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if !near(totalCrossings(got), 3.85) {
		t.Errorf("total %v", totalCrossings(got))
	}
	top := topCrossings(map[string]float64{"moe_host.capi.a": 1, "moe_host.capi.b": 7, "moe_host.go.c": 1, "moe_host.go.d": 2}, 3)
	if len(top) != 3 || top[0].Name != "capi.b" || top[1].Name != "go.d" || top[2].Name != "capi.a" {
		t.Errorf("top: %v", top)
	}
	if len(crossingsPerRequest(before, after, 0)) != 0 {
		t.Error("n = 0 must give nothing")
	}
}

func TestParseStatsSkipsNonIntegers(t *testing.T) {
	got := parseStats("moe_host.capi.continue: 12\nmoe_host.rq_time: P0(nan,1) P25(nan,2)\n\nbad line\nx: -3\n")
	if len(got) != 2 || got["moe_host.capi.continue"] != 12 || got["x"] != -3 {
		t.Errorf("got %v", got)
	}
}

func TestMedianSpreadRatio(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); !near(got, c.want) {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if got := spread([]float64{99, 101}); !near(got, 0.02) {
		t.Errorf("spread %v", got)
	}
	if spread([]float64{5}) != 0 || ratio(0, 3) != 0 || ratio(3, 0) != 0 || !near(ratio(3, 2), 1.5) {
		t.Error("spread/ratio edge cases")
	}
}

func TestSummarizeAndMarkdown(t *testing.T) {
	cg := func(per float64, cross map[string]float64) callgrindRun {
		return callgrindRun{Requests: 1000, Instructions: int64(per * 1000), PerRequest: per, Crossings: cross, GCCycles: int64(per) % 7}
	}
	ld := func(cpu, rps float64) loadRun {
		return loadRun{wrkResult: wrkResult{RPS: rps, P50Us: 500, P99Us: 2500}, CPUPerRequestUs: cpu}
	}
	rs := []*Result{
		{ID: "B0", Name: "router only", Callgrind: []callgrindRun{cg(100e3, nil), cg(102e3, nil)}, Load: []loadRun{ld(20, 1000), ld(22, 900), ld(21, 950)}},
		{ID: "B1", Name: "SDK", Callgrind: []callgrindRun{cg(120e3, map[string]float64{"moe_host.go.on_http_header": 2})},
			Load: []loadRun{ld(30, 800)}},
		{ID: "B3", Name: "chain", Note: "a note",
			Callgrind: []callgrindRun{
				cg(202e3, map[string]float64{"moe_host.capi.increment_metric": 7, "moe_host.capi.finalize": 0.8}),
				cg(204e3, map[string]float64{"moe_host.capi.increment_metric": 7}),
			},
			Errors: []string{"wrk 1: boom"}},
	}
	// The report shows the last run's memory, not the first's.
	rs[2].Callgrind[0].HeapGoalBytes, rs[2].Callgrind[0].GoSysBytes = 8388608, 22124808
	rs[2].Callgrind[1].HeapGoalBytes, rs[2].Callgrind[1].GoSysBytes = 4194304, 13474056
	summarize(rs)
	b0, b1, b3 := rs[0].Summary, rs[1].Summary, rs[2].Summary
	if !near(b0.InstrPerRequest, 101e3) || !near(b0.InstrSpread, 2e3/101e3) || !near(b0.CPUPerReqUs, 21) || !near(b0.RPS, 950) {
		t.Errorf("B0 %+v", b0)
	}
	if !near(b3.InstrVsB0, 203e3/101e3) || !near(b3.InstrVsB1, 203e3/120e3) || b3.CPUVsB0 != 0 {
		t.Errorf("B3 ratios %+v", b3)
	}
	// finalize was absent from the second run: median of 0.8 and 0.
	if !near(b3.Crossings["moe_host.capi.finalize"], 0.4) || !near(b3.CrossingsTotal, 7.4) || b3.TopCrossings[0].Name != "capi.increment_metric" {
		t.Errorf("B3 crossings %+v", b3)
	}
	if !near(b1.CPUVsB0, 30.0/21) || !near(b1.RPSVsB0, 800.0/950) || !near(b1.InstrVsB1, 1) {
		t.Errorf("B1 %+v", b1)
	}

	md := markdown(&Report{Machine: Machine{Date: "2026-01-02 03:04 UTC", NProc: 2, CPUModel: "cpu", Commit: "abc"},
		Settings: params{N: 1000, Warmup: 100, Rounds: 3, Duration: 5 * time.Second, Connections: 16, Threads: 1, Concurrency: 1},
		Results:  rs})
	for _, want := range []string{
		"| B0 | router only | 101.0k | 1.00x | 0.84x | 21 µs | 1.00x | 0.70x | 950 | 500 µs | 2.50 ms | 0 |",
		"| B3 | chain | 203.0k | 2.01x | 1.69x | – | – | – | – | – | – | 7.4 |",
		"| B0 | 100.0k, 102.0k | 5, 3 | – | 1.98% |",
		"| B3 | 202.0k, 204.0k | 1, 6 | 4.2 MB, 13.5 MB | 0.99% |",
		"| B3 | 7.4 | capi.increment_metric 7, capi.finalize 0.4 |",
		"- a note",
		"- B3: wrk 1: boom",
		"2026-01-02 03:04 UTC · 2 CPUs",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestParseFlags(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	p, err := parseFlags(nil, env(nil))
	if err != nil || p.Quick || p.N != 10000 || p.CallgrindRuns != 2 || p.Rounds != 3 || p.Duration != 5*time.Second || len(p.Configs) != len(configs) {
		t.Errorf("defaults: %+v, %v", p, err)
	}
	p, err = parseFlags([]string{"-n", "500"}, env(map[string]string{"BENCH_QUICK": "1", "BENCH_CONFIGS": "b0, B2"}))
	if err != nil || !p.Quick || p.N != 500 || p.CallgrindRuns != 1 || p.Rounds != 1 || p.Duration != 2*time.Second ||
		strings.Join(p.Configs, ",") != "B0,B2" {
		t.Errorf("quick: %+v, %v", p, err)
	}
	for _, bad := range [][]string{{"-configs", "B9"}, {"-duration", "1500ms"}, {"extra"}, {"-threads", "4", "-connections", "2"}} {
		if _, err := parseFlags(bad, env(nil)); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// Every config's bootstrap exists and has what the bench replaces in it.
func TestConfigsMatchTheirFiles(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range configs {
		if seen[c.ID] {
			t.Errorf("duplicate %s", c.ID)
		}
		seen[c.ID] = true
		raw, err := os.ReadFile("../../" + c.File)
		if err != nil {
			t.Errorf("%s: %v", c.ID, err)
			continue
		}
		s := string(raw)
		for _, need := range []struct {
			on  bool
			lit string
		}{{c.Redis, fileRedisAddr}, {c.OTLP, fileOTLPURL}, {c.AccessLog, fileAccessLog}} {
			if need.on && !strings.Contains(s, need.lit) {
				t.Errorf("%s: %s lacks %q", c.ID, c.File, need.lit)
			}
		}
		if !strings.HasPrefix(s, "# "+c.ID+" (cmd/moebench)") {
			t.Errorf("%s: %s should start with \"# %s (cmd/moebench)\"", c.ID, c.File, c.ID)
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	if n, err := parseSchedstat("399616 4152424 3\n"); err != nil || n != 399616 {
		t.Errorf("got %d, %v", n, err)
	}
	if _, err := parseSchedstat("1 2"); err == nil {
		t.Error("two fields: no error")
	}
}
