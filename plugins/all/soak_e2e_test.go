package all_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
// goroutines, heap_bytes, heap_live_bytes, go_sys_bytes). MOE_SOAK_DURATION accepts 1s..2h.
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

	var csv strings.Builder
	csv.WriteString("seconds,requests,rss_bytes,fds,threads,goroutines,heap_bytes,heap_live_bytes,go_sys_bytes\n")
	type sample struct {
		at  time.Duration
		rss int64
	}
	var samples []sample
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
		samples = append(samples, sample{at, u.RSS})
		fmt.Fprintf(&csv, "%.1f,%d,%d,%d,%d,%d,%d,%d,%d\n", at.Seconds(), all.n, u.RSS, u.FDs, u.Threads,
			u.Goroutines, u.HeapBytes, u.HeapLive, u.GoSys)
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
		f := filepath.Join(dir, "soak.csv")
		if err := os.WriteFile(f, []byte(csv.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("samples in %s", f)
	}
	all.check(t, seed)
	if len(samples) < min(maxRounds, 3) {
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
			early = max(early, s.rss)
		}
		for _, s := range samples[mid:] {
			late = max(late, s.rss)
		}
		t.Logf("RSS under load: %.1f MiB after the warm-up, %.1f MiB at the end (highest of each half)", mib(early), mib(late))
		if late > early+early/10+soakRSSSlack {
			t.Errorf("RSS grows under steady load: highest %.1f MiB in the second half, %.1f MiB after the warm-up", mib(late), mib(early))
		}
	}
	checkStrays(t, before, counters, all.strays-warmStrays)
	checkAtRest(t, r.h, base, after)
}
