package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Result is everything measured for one config.
type Result struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	File      string         `json:"file"`
	Note      string         `json:"note,omitempty"`
	Callgrind []callgrindRun `json:"callgrind_runs"`
	Load      []loadRun      `json:"load_rounds"`
	Errors    []string       `json:"errors,omitempty"`
	Summary   Summary        `json:"summary"`
}

// Summary holds the medians over runs and rounds (0 when not measured).
type Summary struct {
	InstrPerRequest float64 `json:"instructions_per_request"`
	// InstrSpread is (max - min) / median of the callgrind runs: their run-to-run agreement.
	InstrSpread   float64 `json:"instructions_spread"`
	CPUPerReqUs   float64 `json:"cpu_us_per_request"`
	RPS           float64 `json:"rps"`
	P50Us         float64 `json:"p50_us"`
	P99Us         float64 `json:"p99_us"`
	IdleCPUMsPerS float64 `json:"idle_cpu_ms_per_s"`
	// Crossings per request by counter (median over the callgrind runs) and their sum.
	Crossings      map[string]float64 `json:"crossings_per_request"`
	CrossingsTotal float64            `json:"crossings_total_per_request"`
	TopCrossings   []namedValue       `json:"top_crossings"`
	// Ratios against B0 and B1 (0 when either side is missing).
	InstrVsB0 float64 `json:"instructions_vs_b0"`
	InstrVsB1 float64 `json:"instructions_vs_b1"`
	CPUVsB0   float64 `json:"cpu_vs_b0"`
	CPUVsB1   float64 `json:"cpu_vs_b1"`
	RPSVsB0   float64 `json:"rps_vs_b0"`
	RPSVsB1   float64 `json:"rps_vs_b1"`
}

// median of xs (the mean of the middle two for an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread is (max - min) / median; 0 for fewer than two values.
func spread(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	m := median(xs)
	if m == 0 {
		return 0
	}
	return (hi - lo) / m
}

// ratio is a / b, 0 when either is missing.
func ratio(a, b float64) float64 {
	if a == 0 || b == 0 {
		return 0
	}
	return a / b
}

// summarize fills every result's Summary: medians, then the ratios against B0 and B1.
func summarize(rs []*Result) {
	for _, r := range rs {
		var instr, cpu, rps, p50, p99, idle []float64
		byName := map[string][]float64{}
		for _, c := range r.Callgrind {
			instr = append(instr, c.PerRequest)
			for k, v := range c.Crossings {
				byName[k] = append(byName[k], v)
			}
		}
		for _, l := range r.Load {
			cpu = append(cpu, l.CPUPerRequestUs)
			rps = append(rps, l.RPS)
			p50 = append(p50, l.P50Us)
			p99 = append(p99, l.P99Us)
			if l.IdleCPUMsPerS != nil {
				idle = append(idle, *l.IdleCPUMsPerS)
			}
		}
		s := Summary{
			InstrPerRequest: median(instr), InstrSpread: spread(instr),
			CPUPerReqUs: median(cpu), RPS: median(rps), P50Us: median(p50), P99Us: median(p99), IdleCPUMsPerS: median(idle),
		}
		if len(byName) > 0 {
			s.Crossings = map[string]float64{}
			for k, vs := range byName {
				// A counter absent from a run was 0 there.
				for len(vs) < len(r.Callgrind) {
					vs = append(vs, 0)
				}
				s.Crossings[k] = median(vs)
			}
			s.CrossingsTotal = totalCrossings(s.Crossings)
			s.TopCrossings = topCrossings(s.Crossings, 5)
		}
		r.Summary = s
	}
	b0, b1 := find(rs, "B0"), find(rs, "B1")
	for _, r := range rs {
		if b0 != nil {
			r.Summary.InstrVsB0 = ratio(r.Summary.InstrPerRequest, b0.Summary.InstrPerRequest)
			r.Summary.CPUVsB0 = ratio(r.Summary.CPUPerReqUs, b0.Summary.CPUPerReqUs)
			r.Summary.RPSVsB0 = ratio(r.Summary.RPS, b0.Summary.RPS)
		}
		if b1 != nil {
			r.Summary.InstrVsB1 = ratio(r.Summary.InstrPerRequest, b1.Summary.InstrPerRequest)
			r.Summary.CPUVsB1 = ratio(r.Summary.CPUPerReqUs, b1.Summary.CPUPerReqUs)
			r.Summary.RPSVsB1 = ratio(r.Summary.RPS, b1.Summary.RPS)
		}
	}
}

func find(rs []*Result, id string) *Result {
	for _, r := range rs {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Report is results.json.
type Report struct {
	Machine  Machine   `json:"machine"`
	Settings params    `json:"settings"`
	Results  []*Result `json:"results"`
	// OTLP counts what B6's receiver got over the whole run.
	OTLP *otlpCounts `json:"otlp,omitempty"`
	// Seconds is the wall time of the whole run.
	Seconds float64 `json:"seconds"`
}

type otlpCounts struct {
	Exports  int64 `json:"exports"`
	Spans    int64 `json:"spans"`
	Rejected int64 `json:"rejected"`
}

// markdown renders report.md.
func markdown(rep *Report) string {
	var b strings.Builder
	m, p := rep.Machine, rep.Settings
	fmt.Fprintf(&b, "# moe end-to-end benchmark (`make bench`)\n\n")
	fmt.Fprintf(&b, "%s · %d CPUs (`nproc`), %s · %s · commit %s · valgrind %s · wrk %s\n\n",
		m.Date, m.NProc, m.CPUModel, m.GoVersion, m.Commit, m.Valgrind, m.Wrk)
	fmt.Fprintf(&b, "moe-host with the echo upstream on loopback, request `GET %s` (answer `%s`, 200), keep-alive. "+
		"Configurations interleaved (round-robin, rotated start), medians.\n\n", requestPath, responseBody)
	b.WriteString(markdownTable(rep))
	b.WriteString("\n")
	for _, r := range rep.Results {
		if r.Note != "" {
			fmt.Fprintf(&b, "- %s\n", r.Note)
		}
	}
	if rep.OTLP != nil {
		fmt.Fprintf(&b, "- B6's OTLP receiver got %d exports with %d spans over the run (%d rejected).\n",
			rep.OTLP.Exports, rep.OTLP.Spans, rep.OTLP.Rejected)
	}

	b.WriteString("\n## Instructions per request: run-to-run agreement\n\n")
	fmt.Fprintf(&b, "callgrind (`valgrind --tool=callgrind --fair-sched=yes`, `GODEBUG=asyncpreemptoff=1 GOMAXPROCS=2`, "+
		"`--concurrency 1`): %d warm-up requests, then `callgrind_control --zero`, %d requests one at a time on one "+
		"keep-alive connection, `callgrind_control --dump`; the dump's Ir total / %d. Startup, warm-up and shutdown "+
		"are outside the window, so they cancel. GC cycles: Go collections that ended in the window "+
		"(each costs millions of instructions, so the window must hold many requests per cycle). Go heap goal "+
		"and memory: libgolang.so's `moe_runtime_heap_goal_bytes` and `moe_runtime_sys_bytes` at the end of "+
		"the last window (what `GOGC`/`GOMEMLIMIT` in the environment change).\n\n", p.Warmup, p.N, p.N)
	b.WriteString("| | runs (instr/req) | GC cycles | Go heap goal, memory | spread |\n|---|---|---|---|--:|\n")
	for _, r := range rep.Results {
		var runs, gcs []string
		mem := ""
		for _, c := range r.Callgrind {
			runs = append(runs, kilo(c.PerRequest))
			gcs = append(gcs, strconv.FormatInt(c.GCCycles, 10))
			if c.GoSysBytes > 0 {
				mem = megabytes(c.HeapGoalBytes) + ", " + megabytes(c.GoSysBytes)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.ID, orDash(strings.Join(runs, ", ")), orDash(strings.Join(gcs, ", ")),
			orDash(mem), pct(r.Summary.InstrSpread, len(r.Callgrind)))
	}

	b.WriteString("\n## Crossings per request (top 5)\n\n")
	b.WriteString("From moe-host's `/stats` over the callgrind window: `capi.*` are C functions Go called, " +
		"`go.*` Go entry points the host called.\n\n")
	b.WriteString("| | total | top |\n|---|--:|---|\n")
	for _, r := range rep.Results {
		var top []string
		for _, nv := range r.Summary.TopCrossings {
			top = append(top, fmt.Sprintf("%s %s", nv.Name, trimFloat(nv.Value)))
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.ID, crossings(r), orDash(strings.Join(top, ", ")))
	}

	b.WriteString("\n## Load (wrk)\n\n")
	fmt.Fprintf(&b, "`wrk -t%d -c%d -d%ds --latency` after %d warm-up requests; moe-host `--concurrency %d`, a fresh host per "+
		"measurement; %d round(s). Host CPU per request = moe-host's utime+stime (/proc/<pid>/stat) over wrk's run / "+
		"requests completed. wrk, the echo upstream and moe-host share the machine's CPUs.\n\n",
		p.Threads, p.Connections, int(p.Duration.Seconds()), p.LoadWarmup, p.Concurrency, p.Rounds)
	fmt.Fprintf(&b, "Idle CPU: the host's CPU time without traffic (all threads, /proc/<pid>/task/*/schedstat), in the first "+
		"round, over %s starting %s after the last warm-up request, in ms per second.\n\n", p.Idle, p.IdleAfter)
	b.WriteString("| | req/s per round | host CPU µs/req per round | p99 per round | idle CPU ms/s |\n|---|---|---|---|--:|\n")
	for _, r := range rep.Results {
		var rps, cpu, p99 []string
		for _, l := range r.Load {
			rps = append(rps, num(l.RPS))
			cpu = append(cpu, trimFloat(l.CPUPerRequestUs))
			p99 = append(p99, us(l.P99Us))
		}
		idle := "–"
		for _, l := range r.Load {
			if l.IdleCPUMsPerS != nil {
				idle = trimFloat(r.Summary.IdleCPUMsPerS)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.ID, orDash(strings.Join(rps, ", ")), orDash(strings.Join(cpu, ", ")),
			orDash(strings.Join(p99, ", ")), idle)
	}

	var errs []string
	for _, r := range rep.Results {
		for _, e := range r.Errors {
			errs = append(errs, fmt.Sprintf("- %s: %s", r.ID, strings.ReplaceAll(trim(e, 600), "\n", " ")))
		}
	}
	if len(errs) > 0 {
		b.WriteString("\n## Errors (runs left out of the medians)\n\n")
		b.WriteString(strings.Join(errs, "\n") + "\n")
	}
	fmt.Fprintf(&b, "\nWhole run: %.0f s. Raw figures: `results.json`; chart: `chart.png`.\n", rep.Seconds)
	return b.String()
}

// markdownTable is the main table: one row per config.
func markdownTable(rep *Report) string {
	var b strings.Builder
	b.WriteString("| | config | instr/req | ×B0 | ×B1 | host CPU/req | ×B0 | ×B1 | req/s | p50 | p99 | crossings/req |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rep.Results {
		s := r.Summary
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.ID, r.Name, kilo(s.InstrPerRequest), x(s.InstrVsB0), x(s.InstrVsB1),
			us(s.CPUPerReqUs), x(s.CPUVsB0), x(s.CPUVsB1),
			num(s.RPS), us(s.P50Us), us(s.P99Us), crossings(r))
	}
	return b.String()
}

func crossings(r *Result) string {
	if len(r.Callgrind) == 0 {
		return "–"
	}
	return trimFloat(r.Summary.CrossingsTotal)
}

// kilo formats instructions: 88612 -> "88.6k".
func kilo(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1fk", v/1000)
}

// megabytes formats bytes in MB of 10^6 bytes, as the README's tables: 13474056 -> "13.5 MB".
func megabytes(v int64) string { return fmt.Sprintf("%.1f MB", float64(v)/1e6) }

// x formats a ratio: "1.23x".
func x(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", v)
}

// us formats microseconds: "151 µs", "1.20 ms".
func us(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v < 1000:
		return fmt.Sprintf("%.0f µs", v)
	default:
		return fmt.Sprintf("%.2f ms", v/1000)
	}
}

func num(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", v)
}

func pct(v float64, runs int) string {
	if runs < 2 {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", v*100)
}

// trimFloat prints up to two decimals without trailing zeros: 7, 2.5, 0.33.
func trimFloat(v float64) string {
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
