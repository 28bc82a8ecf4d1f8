package all_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// The soak: the chaos suite's mix of requests (chaosKinds, with Redis and the authorization
// service up) through the same host for MOE_SOAK_DURATION, in rounds of a second's worth of
// requests, sampling what the host uses after each round. Every outcome must be a correct answer or a clean
// error, RSS must be flat after the warm-up, and at rest afterwards the host must be back at
// its baseline (as in the chaos suite).
//
// In `make test` it runs soakDefault (well under a minute with the setup and the two rests).
// The long soak, `make soak`, is the same test with MOE_SOAK_DURATION=10m and MOE_SOAK_OUT=out/soak,
// which keeps the samples in out/soak/soak.csv (seconds, requests, rss_bytes, fds, threads,
// goroutines, heap_bytes, heap_live_bytes, go_sys_bytes) and plots them in out/soak/soak.png. MOE_SOAK_DURATION accepts 1s..2h.
const (
	soakDefault = 8 * time.Second
	soakRound   = time.Second
	// RSS under load after the warm-up may grow by this much plus 10% (allocator noise, pools
	// reaching their size); more is a leak.
	soakRSSSlack = 24 << 20
)

func TestSoak(t *testing.T) {
	d := soakDefault
	if v := os.Getenv("MOE_SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < time.Second || d > 2*time.Hour {
			t.Fatalf("MOE_SOAK_DURATION=%q: want a duration in 1s..2h", v)
		}
	}
	seed := uint64(chaosDefaultSeed)
	r, _, auth := startChaos(t, seed)
	var all tally
	r.phase("warm-up", chaosWarm, nil)
	all.add(r, r.take())
	warmStrays, warmN := all.strays, all.n
	base := r.idle(auth)
	before := r.counters()

	var samples []soakSample
	start := time.Now()
	// A round issues a second's worth of requests at chaosRate and ends with its slowest
	// request (a stalled upstream is timed out after 1s), so a round takes one to two seconds.
	perRound := int(chaosRate * soakRound / time.Second)
	maxRounds := int(d / soakRound)
	for i := 0; i < maxRounds && time.Since(start) < d; i++ { // bounded in count and in time
		r.phase(fmt.Sprintf("soak %d", i), perRound, nil)
		all.add(r, r.take())
		u := r.h.Usage(t)
		at := time.Since(start)
		samples = append(samples, soakSample{at: at, requests: all.n - warmN, Usage: u})
		if len(all.unexplained) > 100 {
			break // it failed; say so without waiting for the end
		}
	}
	elapsed := time.Since(start)
	r.h.Alive(t)
	after := r.idle(auth)
	counters := r.counters()
	r.h.Alive(t)

	t.Logf("soak: %d requests in %v (%d rounds; %d in the warm-up before), outcomes by class:%s", all.n-warmN, elapsed.Round(time.Millisecond), len(samples), warmN, all.summary())
	t.Logf("at rest before: %v", base)
	t.Logf("at rest after:  %v", after)
	if dir := os.Getenv("MOE_SOAK_OUT"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "soak.csv"), soakCSV(samples), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := soakPlot(samples, filepath.Join(dir, "soak.png")); err != nil {
			t.Fatal(err)
		}
		t.Logf("samples in %s/soak.csv, plotted in %s/soak.png", dir, dir)
	}
	all.check(t, seed)
	if len(samples) < max(1, maxRounds/3) { // a round takes one to two seconds
		t.Errorf("only %d rounds ran in %v", len(samples), elapsed)
	}

	// Flat RSS after the warm-up: the first quarter of the rounds (at least one) warms up; the
	// highest RSS of the last half may exceed the highest of the warmed-up part before it by
	// soakRSSSlack plus 10%.
	if len(samples) >= 4 {
		warm := max(1, len(samples)/4)
		mid := len(samples) / 2
		var early, late int64
		for _, s := range samples[warm:mid] {
			early = max(early, s.RSS)
		}
		for _, s := range samples[mid:] {
			late = max(late, s.RSS)
		}
		t.Logf("RSS under load: %.1f MiB after the warm-up, %.1f MiB at the end (highest of each half)", mib(early), mib(late))
		if late > early+early/10+soakRSSSlack {
			t.Errorf("RSS grows under steady load: highest %.1f MiB in the second half, %.1f MiB after the warm-up", mib(late), mib(early))
		}
	}
	checkStrays(t, before, counters, all.strays-warmStrays)
	checkAtRest(t, r.h, base, after)
}

// soakSample is what the host used after a round of the soak.
type soakSample struct {
	at       time.Duration // since the soak began
	requests int           // requests so far
	hosttest.Usage
}

func soakCSV(samples []soakSample) []byte {
	var b strings.Builder
	b.WriteString("seconds,requests,rss_bytes,fds,threads,goroutines,heap_bytes,heap_live_bytes,go_sys_bytes\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%.1f,%d,%d,%d,%d,%d,%d,%d,%d\n", s.at.Seconds(), s.requests, s.RSS, s.FDs, s.Threads,
			s.Goroutines, s.HeapBytes, s.HeapLive, s.GoSys)
	}
	return []byte(b.String())
}

// soakPlot draws the samples over time into a PNG: memory (RSS, Go heap, live heap, Go sys) in
// MiB above, goroutines, open fds and threads below.
func soakPlot(samples []soakSample, path string) error {
	line := func(p *plot.Plot, i int, label string, y func(soakSample) float64) error {
		xys := make(plotter.XYs, len(samples))
		for j, s := range samples {
			xys[j] = plotter.XY{X: s.at.Seconds(), Y: y(s)}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(label, l)
		return nil
	}
	if len(samples) == 0 {
		return nil
	}
	mem, counts := plot.New(), plot.New()
	last := samples[len(samples)-1]
	mem.Title.Text = fmt.Sprintf("moe-host under the soak: %d requests in %.0f s", last.requests, last.at.Seconds())
	mem.Y.Label.Text, counts.Y.Label.Text = "MiB", "count"
	counts.X.Label.Text = "seconds"
	for _, p := range []*plot.Plot{mem, counts} {
		p.Y.Min = 0
		p.Legend.Top, p.Legend.Left = true, true
	}
	for i, s := range []struct {
		label string
		y     func(soakSample) float64
	}{
		{"RSS", func(s soakSample) float64 { return mib(s.RSS) }},
		{"Go heap", func(s soakSample) float64 { return mib(s.HeapBytes) }},
		{"Go live heap", func(s soakSample) float64 { return mib(s.HeapLive) }},
		{"Go sys", func(s soakSample) float64 { return mib(s.GoSys) }},
	} {
		if err := line(mem, i, s.label, s.y); err != nil {
			return err
		}
	}
	for i, s := range []struct {
		label string
		y     func(soakSample) float64
	}{
		{"goroutines", func(s soakSample) float64 { return float64(s.Goroutines) }},
		{"open fds", func(s soakSample) float64 { return float64(s.FDs) }},
		{"threads", func(s soakSample) float64 { return float64(s.Threads) }},
	} {
		if err := line(counts, i, s.label, s.y); err != nil {
			return err
		}
	}
	for _, p := range []*plot.Plot{mem, counts} {
		p.Y.Max *= 1.3 // room for the legend above the lines
		p.X.Min = 0
	}
	img := vgimg.New(vg.Points(720), vg.Points(540))
	dc := draw.New(img)
	plots := [][]*plot.Plot{{mem}, {counts}}
	canvases := plot.Align(plots, draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(8)}, dc)
	mem.Draw(canvases[0][0])
	counts.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
