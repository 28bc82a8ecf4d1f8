package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// The whole harness, tiny: B0 and B2, one callgrind run of 100 requests and one 1-second wrk
// run each (about 10 s). -short skips it; without valgrind or wrk it skips, unless
// MOE_REQUIRE_HOST=1 (make test), where it fails.
func TestSmokeQuickB0B2(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the smoke run starts moe-host four times, twice under valgrind")
	}
	p, err := parseFlags([]string{"-quick", "-configs", "B0,B2", "-n", "100", "-warmup", "20", "-duration", "1s",
		"-load-warmup", "50", "-connections", "4", "-out", t.TempDir()}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if err := preflight(p); err != nil {
		if os.Getenv("MOE_REQUIRE_HOST") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	start := time.Now()
	rep, err := benchmark(p, io.Discard)
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, readLog(p.Out))
	}
	t.Logf("smoke run: %.1fs", time.Since(start).Seconds())
	b0, b2 := find(rep.Results, "B0"), find(rep.Results, "B2")
	if len(b0.Callgrind) != 1 || len(b2.Callgrind) != 1 || len(b0.Load) != 1 || len(b2.Load) != 1 {
		t.Fatalf("runs missing: %+v %+v", b0, b2)
	}
	s0, s2 := b0.Summary, b2.Summary
	// The router alone crosses nothing; key-auth in moe at least a header call each way,
	// log, stream complete and destroy.
	if s0.CrossingsTotal != 0 || s2.CrossingsTotal < 5 || s2.Crossings["moe_host.go.on_http_header"] != 2 {
		t.Errorf("crossings: B0 %v, B2 %v", s0.Crossings, s2.Crossings)
	}
	if s0.InstrPerRequest < 10e3 || s2.InstrVsB0 <= 1 {
		t.Errorf("instructions per request: B0 %.0f, B2 %.2fx B0", s0.InstrPerRequest, s2.InstrVsB0)
	}
	if s0.RPS <= 0 || s2.CPUPerReqUs <= 0 || s2.P99Us < s2.P50Us {
		t.Errorf("load: B0 %+v, B2 %+v", b0.Load, b2.Load)
	}
	if err := write(rep, p.Out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "results.json", "chart.png"} {
		if st, err := os.Stat(filepath.Join(p.Out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func readLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "moebench.log"))
	return string(b)
}

// Every configuration's bootstrap starts in moe-host and lets the benchmark's request through
// (B0 and B2 are covered by the smoke run), so a change to a plugin cannot silently turn a
// configuration into a 401 benchmark.
func TestEveryConfigAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts moe-host once per configuration")
	}
	s := startServices(t, configs)
	for _, c := range configs {
		if c.ID == "B0" || c.ID == "B2" {
			continue
		}
		t.Run(c.ID, func(t *testing.T) {
			h := startHost(t, c, s, hosttest.Options{Concurrency: 1, LogLevel: "warning"})
			cl, err := newClient(h.URL, c.Headers)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.close()
			if err := cl.run(3, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			if c.Auth {
				// Without the key the chains refuse: the benchmark measures the authenticated path.
				bare, _ := newClient(h.URL, nil)
				defer bare.close()
				if err := bare.run(1, 30*time.Second); err == nil || !strings.Contains(err.Error(), "status 401") {
					t.Errorf("without the API key: %v, want a 401", err)
				}
			}
		})
	}
}
