// Command moebench is the end-to-end benchmark of `make bench`: it runs moe-host (out/moe-host
// with out/libgolang.so, as built by `make build`) and the echo upstream on loopback over the
// configurations B0..B6 (configs.go, bootstraps in envoy/bench/) and measures, interleaved
// (round-robin over the configs, several rounds, medians), instructions per request under
// callgrind, requests/s, p50/p99 and host CPU per request under wrk, and C/Go crossings per
// request from moe-host's /stats. It writes out/bench/report.md, results.json and chart.png.
// See README.md.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// params are the knobs of a run (results.json "settings").
type params struct {
	Quick         bool          `json:"quick"`
	Configs       []string      `json:"configs"`
	CallgrindRuns int           `json:"callgrind_runs"`
	Warmup        int           `json:"callgrind_warmup_requests"`
	N             int           `json:"callgrind_requests"`
	Rounds        int           `json:"load_rounds"`
	Duration      time.Duration `json:"load_duration_ns"`
	Connections   int           `json:"wrk_connections"`
	Threads       int           `json:"wrk_threads"`
	LoadWarmup    int           `json:"load_warmup_requests"`
	IdleAfter     time.Duration `json:"idle_after_ns"`
	Idle          time.Duration `json:"idle_ns"`
	Concurrency   int           `json:"host_concurrency"`
	ClockTicks    int64         `json:"clock_ticks"`
	Out           string        `json:"-"`
	Profiles      string        `json:"-"`
	From          string        `json:"-"`
	Breakdown     []string      `json:"-"`
}

func main() {
	p, err := parseFlags(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "moebench:", err)
		os.Exit(2)
	}
	if len(p.Breakdown) > 0 {
		if err := printBreakdown(os.Stdout, p.Out, p.Breakdown); err != nil {
			fmt.Fprintln(os.Stderr, "moebench:", err)
			os.Exit(1)
		}
		return
	}
	var rep *Report
	if p.From != "" {
		rep, err = load(p.From)
	} else {
		rep, err = benchmark(p, os.Stderr)
	}
	if rep != nil {
		if werr := write(rep, p.Out); werr != nil {
			err = errors.Join(err, werr)
		} else {
			fmt.Fprintf(os.Stderr, "moebench: wrote %s\n", filepath.Join(p.Out, "report.md"))
			fmt.Print(markdownTable(rep))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "moebench:", err)
		os.Exit(1)
	}
}

// parseFlags reads the flags; BENCH_QUICK=1 (or -quick) changes the defaults to a quick run,
// BENCH_CONFIGS the default config list.
func parseFlags(args []string, getenv func(string) string) (params, error) {
	fs := flag.NewFlagSet("moebench", flag.ContinueOnError)
	quick := fs.Bool("quick", getenv("BENCH_QUICK") == "1", "quick run: fewer requests, one round (also BENCH_QUICK=1)")
	cfgs := fs.String("configs", getenv("BENCH_CONFIGS"), "comma-separated config ids (default all: B0, B1, B1K, B2..B6; also BENCH_CONFIGS)")
	runs := fs.Int("callgrind-runs", 0, "callgrind runs per config (default 2, quick 1; 0 with -skip-callgrind)")
	n := fs.Int("n", 0, "requests measured per callgrind run (default 10000, quick 300)")
	warm := fs.Int("warmup", 0, "warm-up requests before each callgrind window (default 200, quick 50)")
	rounds := fs.Int("rounds", 0, "wrk rounds per config (default 3, quick 1)")
	dur := fs.Duration("duration", 0, "wrk duration per measurement, whole seconds (default 5s, quick 2s)")
	conns := fs.Int("connections", 16, "wrk connections")
	threads := fs.Int("threads", 1, "wrk threads")
	loadWarm := fs.Int("load-warmup", 300, "sequential warm-up requests before each wrk run")
	idle := fs.Duration("idle", time.Second, "how long the host's idle CPU is measured, in the first wrk round (0: not)")
	idleAfter := fs.Duration("idle-after", 1500*time.Millisecond, "quiet time before the idle CPU is measured (metric flushes and request timers settle)")
	conc := fs.Int("concurrency", 1, "moe-host --concurrency for the wrk runs (callgrind runs use 1)")
	skipCG := fs.Bool("skip-callgrind", false, "no callgrind runs")
	skipLoad := fs.Bool("skip-load", false, "no wrk runs")
	out := fs.String("out", "out/bench", "output directory")
	from := fs.String("from", "", "measure nothing: write report.md and chart.png again from this results.json")
	brk := fs.String("breakdown", "", "measure nothing: self cost per request by category of these configs (B1,B2), from the profiles and results.json in -out")
	if err := fs.Parse(args); err != nil {
		return params{}, err
	}
	if fs.NArg() > 0 {
		return params{}, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	p := params{Breakdown: splitIDs(*brk), Profiles: filepath.Join(*out, "callgrind"), Quick: *quick, Connections: *conns, Threads: *threads, LoadWarmup: *loadWarm, Idle: *idle, IdleAfter: *idleAfter, Concurrency: *conc, Out: *out, From: *from}
	pick := func(v, full, q int) int {
		switch {
		case v > 0:
			return v
		case p.Quick:
			return q
		}
		return full
	}
	p.CallgrindRuns = pick(*runs, 2, 1)
	// 10000, not fewer: a Go GC cycle costs B2 ~9M instructions and comes every ~1000
	// requests (B1: every ~7000), so at 2000 requests one cycle more or less in the window
	// moved a figure by ~4.5k instructions a request.
	p.N = pick(*n, 10000, 300)
	p.Warmup = pick(*warm, 200, 50)
	p.Rounds = pick(*rounds, 3, 1)
	p.Duration = *dur
	if p.Duration == 0 {
		p.Duration = map[bool]time.Duration{false: 5 * time.Second, true: 2 * time.Second}[p.Quick]
	}
	if p.Duration < time.Second || p.Duration > 5*time.Minute || p.Duration%time.Second != 0 {
		return params{}, fmt.Errorf("-duration %v: whole seconds from 1s to 5m", p.Duration)
	}
	if *skipCG {
		p.CallgrindRuns = 0
	}
	if *skipLoad {
		p.Rounds = 0
	}
	if p.Connections < 1 || p.Threads < 1 || p.Threads > p.Connections || p.Concurrency < 1 || p.N > 1_000_000 {
		return params{}, fmt.Errorf("need connections >= threads >= 1, concurrency >= 1, n <= 1e6")
	}
	if *cfgs == "" {
		for _, c := range configs {
			p.Configs = append(p.Configs, c.ID)
		}
	} else {
		for _, id := range strings.Split(*cfgs, ",") {
			id = strings.ToUpper(strings.TrimSpace(id))
			if _, ok := configByID(id); !ok {
				return params{}, fmt.Errorf("unknown config %q (B0, B1, B1K, B2..B6)", id)
			}
			p.Configs = append(p.Configs, id)
		}
	}
	return p, nil
}

// benchmark runs every measurement, interleaved: callgrind runs round-robin over the configs,
// then wrk rounds round-robin, each round starting one config later than the previous one.
// A failed measurement is recorded in its result and left out; the error says which failed.
func benchmark(p params, progress io.Writer) (*Report, error) {
	start := time.Now()
	if err := preflight(p); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(p.Out, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(p.Out, "moebench.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	p.ClockTicks = clockTicks()
	var cs []Config
	for _, id := range p.Configs {
		c, _ := configByID(id)
		cs = append(cs, c)
	}
	rep := &Report{Machine: machine(start), Settings: p}
	results := make([]*Result, len(cs))
	for i, c := range cs {
		results[i] = &Result{ID: c.ID, Name: c.Name, File: c.File, Note: c.Note}
	}
	rep.Results = results
	failed := 0
	// One program-level tb.Run holds the shared services (Redis, the OTLP receiver); each
	// measurement runs in one of its own, so its host stops when it ends.
	err = tb.Run(logf, func(t tb.TB) {
		s := startServices(t, cs)
		measure := func(kind string, round, of int, f func(t tb.TB, c Config, r *Result)) {
			for j := range cs {
				i := (j + round) % len(cs)
				c, r := cs[i], results[i]
				began := time.Now()
				fmt.Fprintf(progress, "moebench: %s %d/%d %s (%s)... ", kind, round+1, of, c.ID, c.Name)
				fmt.Fprintf(logf, "=== %s %d/%d %s\n", kind, round+1, of, c.ID)
				if err := tb.Run(logf, func(t tb.TB) { f(t, c, r) }); err != nil {
					failed++
					r.Errors = append(r.Errors, fmt.Sprintf("%s %d: %v", kind, round+1, err))
					fmt.Fprintf(progress, "FAILED (%v; see %s)\n", firstLine(err.Error()), logf.Name())
					continue
				}
				fmt.Fprintf(progress, "%s\n", progressLine(kind, r, time.Since(began)))
			}
		}
		for round := 0; round < p.CallgrindRuns; round++ {
			measure("callgrind", round, p.CallgrindRuns, func(t tb.TB, c Config, r *Result) {
				r.Callgrind = append(r.Callgrind, measureCallgrind(t, c, s, p))
			})
		}
		for round := 0; round < p.Rounds; round++ {
			measure("wrk", round, p.Rounds, func(t tb.TB, c Config, r *Result) {
				r.Load = append(r.Load, measureLoad(t, c, s, p, round))
			})
		}
		if s.otlp != nil {
			rep.OTLP = &otlpCounts{Exports: s.otlp.exports.Load(), Spans: s.otlp.spans.Load(), Rejected: s.otlp.bad.Load()}
		}
	})
	summarize(results)
	rep.Seconds = time.Since(start).Seconds()
	if err != nil {
		return rep, fmt.Errorf("services: %w", err)
	}
	if failed > 0 {
		return rep, fmt.Errorf("%d measurement(s) failed (listed in report.md; details in %s)", failed, logf.Name())
	}
	return rep, nil
}

func progressLine(kind string, r *Result, d time.Duration) string {
	switch kind {
	case "callgrind":
		c := r.Callgrind[len(r.Callgrind)-1]
		mem := ""
		if c.GoSysBytes > 0 {
			mem = ", Go memory " + megabytes(c.GoSysBytes)
		}
		return fmt.Sprintf("%s instr/req, %s crossings/req, %d GC cycles%s (%.0fs)", kilo(c.PerRequest), trimFloat(totalCrossings(c.Crossings)), c.GCCycles, mem, d.Seconds())
	default:
		l := r.Load[len(r.Load)-1]
		return fmt.Sprintf("%.0f req/s, p99 %s, %s CPU/req (%.0fs)", l.RPS, us(l.P99Us), us(l.CPUPerRequestUs), d.Seconds())
	}
}

// preflight checks the tools (valgrind, callgrind_control, wrk, redis-server) before any
// measurement, so a missing one fails at once with the way to install it.
func preflight(p params) error {
	var tools []string
	if p.CallgrindRuns > 0 {
		tools = append(tools, "valgrind", "callgrind_control")
	}
	if p.Rounds > 0 {
		tools = append(tools, "wrk")
	}
	for _, id := range p.Configs {
		if c, _ := configByID(id); c.Redis {
			tools = append(tools, "redis-server")
			break
		}
	}
	var missing []string
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s on PATH: run make deps (build/install-deps.sh installs valgrind, wrk, redis-server)", strings.Join(missing, ", "))
	}
	return nil
}

// load reads a results.json written by an earlier run and summarizes it again.
func load(path string) (*Report, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	summarize(rep.Results)
	return &rep, nil
}

// write puts report.md, results.json and chart.png into dir.
func write(rep *Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(markdown(rep)), 0o644); err != nil {
		return err
	}
	return writeChart(rep, filepath.Join(dir, "chart.png"))
}

func splitIDs(s string) []string {
	var ids []string
	for _, id := range strings.Split(s, ",") {
		if id = strings.ToUpper(strings.TrimSpace(id)); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// printBreakdown writes the -breakdown table of configs ids: the profiles a run kept in
// dir/callgrind and the request count of each config's last callgrind run in dir/results.json
// (the run whose profile was kept).
func printBreakdown(w io.Writer, dir string, ids []string) error {
	rep, err := load(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	var profiles []string
	var requests []int
	for _, id := range ids {
		n := 0
		for _, r := range rep.Results {
			if r.ID == id && len(r.Callgrind) > 0 {
				n = r.Callgrind[len(r.Callgrind)-1].Requests
			}
		}
		if n == 0 {
			return fmt.Errorf("%s: no callgrind run in %s", id, filepath.Join(dir, "results.json"))
		}
		profiles = append(profiles, filepath.Join(dir, "callgrind", id+".callgrind"))
		requests = append(requests, n)
	}
	cats, per, totals, err := breakdown(profiles, requests)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, breakdownMarkdown(ids, cats, per, totals))
	return err
}
