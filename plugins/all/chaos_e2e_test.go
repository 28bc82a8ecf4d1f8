package all_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/redistest"
)

// The chaos suite: thousands of requests through the demo chain (chaosBootstrap) while clients
// abort mid-body and mid-response, the upstream resets, closes and stalls, test plugins panic
// in a phase or block, and Redis and the authorization service go away and come back. Every
// request must get a correct answer or a clean error (each outcome is classified; an outcome
// no class explains fails the test), the host must not crash, every stream must run its log
// and destroy hooks, and goroutines and memory must return to their baseline afterwards.
//
// Bounded: MOE_CHAOS_REQUESTS requests (default 3000) at most chaosRate per second, issued
// for chaosMaxIssue at most, plus a warm-up and a cool-down of chaosWarm requests each. The
// random choices come from MOE_CHAOS_SEED (default chaosDefaultSeed), logged, so a failure
// reproduces with the same seed (timings aside).
const (
	chaosDefaultSeed = 20261201
	chaosDefaultN    = 3000
	chaosWarm        = 400
	chaosWorkers     = 24
	chaosRate        = 250 // requests per second, all workers together
	chaosMaxIssue    = 40 * time.Second
	chaosSample      = 100 * time.Millisecond // the host's runtime gauge interval

	// After Redis or the service came back, clients may still see the outage this long
	// (go-redis probes a refused node about once a second before using it again).
	redisSlack = 3 * time.Second
	authSlack  = time.Second

	// What "back to baseline" allows, after the same warm load before and after.
	goroutineSlack = 3
	heapLiveSlack  = 8 << 20  // plus 50% of the baseline
	rssSlack       = 96 << 20 // the C++ side's allocator keeps some of the peak
	fdSlack        = 24       // upstream keep-alive pools may end a few connections larger
)

func TestChaosUnderLoad(t *testing.T) {
	seed := uint64(chaosDefaultSeed)
	if v := os.Getenv("MOE_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("MOE_CHAOS_SEED=%q: %v", v, err)
		}
		seed = n
	}
	total := chaosDefaultN
	if v := os.Getenv("MOE_CHAOS_REQUESTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100000 {
			t.Fatalf("MOE_CHAOS_REQUESTS=%q: want 1..100000", v)
		}
		total = n
	}
	t.Logf("chaos: seed %d (MOE_CHAOS_SEED reproduces it), %d requests", seed, total)

	r, redis, auth := startChaos(t, seed)
	h := r.h
	var all tally

	// Warm up with the load's mix and no outage, then measure the idle baseline.
	r.phase("warm-up", chaosWarm, nil)
	all.add(r, r.take())
	warmStrays := all.strays
	base := r.idle(auth)
	baseCounters := r.counters()
	t.Logf("baseline at rest: %v", base)

	// The chaos: the same mix, a flood from one client, outages on a schedule.
	start := time.Now()
	var flood sync.WaitGroup
	flood.Add(1)
	go func() { defer flood.Done(); r.flood(80) }()
	r.phase("chaos", total, []chaosEvent{
		{0.10, "redis down", func() { redis.Stop() }},
		{0.25, "redis up", func() { redis.Start() }},
		{0.30, "auth service down", auth.Stop},
		{0.45, "auth service up", func() { auth.Start(t) }},
		{0.55, "redis down", func() { redis.Stop() }},
		{0.60, "auth service down", auth.Stop},
		{0.70, "redis up", func() { redis.Start() }},
		{0.75, "auth service up", func() { auth.Start(t) }},
	})
	flood.Wait()
	chaosTime := time.Since(start)
	h.Alive(t)
	var chaos tally
	chaos.add(r, r.take())
	all.merge(chaos)

	// Cool down with the warm-up's load, then at rest again.
	r.phase("cool-down", chaosWarm, nil)
	all.add(r, r.take())
	after := r.idle(auth)
	counters := r.counters()
	h.Alive(t)

	// Every outcome explained.
	chaosN, classes := chaos.n, chaos.classes
	t.Logf("chaos: %d requests in %v (%.0f/s), seed %d; outcomes by class:%s", chaosN, chaosTime.Round(time.Millisecond),
		float64(chaosN)/chaosTime.Seconds(), seed, chaos.summary())
	t.Logf("at rest before: %v", base)
	t.Logf("at rest after:  %v", after)
	all.check(t, seed)
	if chaosN < total/4 {
		t.Errorf("only %d of %d chaos requests were sent within %v", chaosN, total, chaosMaxIssue)
	}
	for _, must := range []string{"panic 500", "ok (stray goroutine)", "ok limit-count failed open (redis down)", "auth service unavailable 403",
		"nonce store unavailable 503", "upstream reset 503", "upstream timeout 504", "limit-req 429 (flood)",
		"client aborted mid-body", "client timed out (plugin blocks)"} {
		if classes[must] == 0 {
			t.Errorf("no chaos outcome of class %q: the fault was not exercised", must)
		}
	}

	// Every stream ran its log and destroy hooks once.
	for _, tag := range []string{"s", "a"} {
		if counters["log:"+tag] != counters["destroy:"+tag] || counters["destroy:"+tag] < counters["receive:"+tag] {
			t.Errorf("test plugin %s: %d requests seen, %d log hooks, %d destroy hooks", tag,
				counters["receive:"+tag], counters["log:"+tag], counters["destroy:"+tag])
		}
	}
	if counters["receive:s"]-baseCounters["receive:s"] < chaosN/2 {
		t.Errorf("the test plugin saw %d of the %d chaos requests", counters["receive:s"]-baseCounters["receive:s"], chaosN)
	}
	checkStrays(t, baseCounters, counters, all.strays-warmStrays)
	checkAtRest(t, h, base, after)
}

// checkStrays checks what the goroutines that outlived their requests (kind "stray": e2e-async
// keeps using the request's headers and route for 300ms after its phase) got: every one ran to
// its end, and each access after the stream was handed back or destroyed failed with a typed
// error or a recovered stream panic, never anything else (and never reached C: the host is
// alive). strays is the number of stray requests answered 200 (each started one).
func checkStrays(t *testing.T, before, after map[string]int, strays int) {
	t.Helper()
	d := func(k string) int { return after[k] - before[k] }
	t.Logf("stray goroutines: %d requests answered; done %d, accesses ok %d, released %d, destroyed %d, read-only %d",
		strays, d("stray-done"), d("stray-ok"), d("stray-released"), d("stray-destroyed"), d("stray-readonly"))
	if d("stray-done") < strays {
		t.Errorf("%d stray goroutines ran to their end, %d were started", d("stray-done"), strays)
	}
	if after["stray-untyped"] != 0 || after["stray-untyped-panic"] != 0 {
		t.Errorf("stray goroutines got %d untyped errors and %d panics that are not stream errors",
			after["stray-untyped"], after["stray-untyped-panic"])
	}
	if strays > 0 && d("stray-released")+d("stray-destroyed") == 0 {
		t.Errorf("no stray goroutine was refused access after its phase (%d accesses allowed)", d("stray-ok"))
	}
}

// checkAtRest compares the host's usage at rest after the load with the baseline.
func checkAtRest(t *testing.T, h *hosttest.Host, base, after hosttest.Usage) {
	t.Helper()
	if after.Goroutines > base.Goroutines+goroutineSlack {
		t.Errorf("goroutines at rest: %d after the chaos, %d before", after.Goroutines, base.Goroutines)
	}
	if after.HeapLive > base.HeapLive+base.HeapLive/2+heapLiveSlack {
		t.Errorf("live heap at rest: %.1f MiB after the chaos, %.1f MiB before", mib(after.HeapLive), mib(base.HeapLive))
	}
	if maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", h.Pid())); bytes.Contains(maps, []byte("libasan")) {
		// ASan keeps freed memory in its quarantine (256 MiB by default): RSS says nothing
		// there, and LeakSanitizer checks for leaks when the host exits.
		t.Logf("AddressSanitizer build: RSS not compared")
	} else if after.RSS > base.RSS+rssSlack {
		t.Errorf("RSS at rest: %.1f MiB after the chaos, %.1f MiB before", mib(after.RSS), mib(base.RSS))
	}
	if after.FDs > base.FDs+fdSlack {
		t.Errorf("open fds at rest: %d after the chaos, %d before", after.FDs, base.FDs)
	}
}

// tally classifies outcomes: the classes of the correct answers and clean errors, and the
// outcomes that are neither.
type tally struct {
	n           int
	classes     map[string]int
	unexplained []string
	strays      int // stray requests answered 200
}

func (a *tally) add(r *chaosRun, outs []outcome) {
	if a.classes == nil {
		a.classes = map[string]int{}
	}
	for _, o := range outs {
		a.n++
		class, err := r.classify(o)
		if err != nil {
			a.unexplained = append(a.unexplained, fmt.Sprintf("%s %s: %v (%s)", o.phase, o.kind, err, o))
			continue
		}
		a.classes[class]++
		if o.kind == "stray" {
			a.strays++
		}
	}
}

func (a *tally) merge(b tally) {
	if a.classes == nil {
		a.classes = map[string]int{}
	}
	a.n += b.n
	a.strays += b.strays
	for c, n := range b.classes {
		a.classes[c] += n
	}
	a.unexplained = append(a.unexplained, b.unexplained...)
}

func (a *tally) summary() string {
	names := make([]string, 0, len(a.classes))
	for c := range a.classes {
		names = append(names, c)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, c := range names {
		fmt.Fprintf(&b, "\n  %6d  %s", a.classes[c], c)
	}
	return b.String()
}

// check fails the test when some outcome is not a correct answer or a clean error.
func (a *tally) check(t *testing.T, seed uint64) {
	t.Helper()
	if len(a.unexplained) > 0 {
		n := min(len(a.unexplained), 40)
		t.Errorf("%d of %d outcomes are not a correct answer or a clean error (seed %d); the first %d:\n%s",
			len(a.unexplained), a.n, seed, n, strings.Join(a.unexplained[:n], "\n"))
	}
}

// startChaos starts the chaos suite's world: Redis, the authorization service, the bad and the
// echo upstreams, and moe-host with chaosBootstrap and the e2e library.
func startChaos(t *testing.T, seed uint64) (*chaosRun, *redistest.Server, *authService) {
	t.Helper()
	redis := redistest.Start(t)
	auth := startAuthService(t)
	bad := startBadUpstream(t)
	up := echo.Start(t, "upstream")
	h := hosttest.Start(t, chaosBootstrap(t), hosttest.Vars{
		"UpstreamPort": up.Port, "BadPort": bad.port, "Redis": redis.Addr(), "AuthAddr": auth.addr,
	}, hosttest.Options{Library: "libmoe-e2e.so", LogLevel: "warning",
		Env: []string{metrics.RuntimeSampleIntervalEnv + "=" + chaosSample.String()}})
	return &chaosRun{t: t, h: h, seed: seed}, redis, auth
}

// take returns the outcomes so far and forgets them.
func (r *chaosRun) take() []outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	outs := r.outcomes
	r.outcomes = nil
	return outs
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

type window struct{ from, to time.Time }

type chaosEvent struct {
	at   float64 // fraction of the phase's requests done
	name string
	do   func()
}

type chaosRun struct {
	t    *testing.T
	h    *hosttest.Host
	seed uint64

	mu          sync.Mutex
	outcomes    []outcome
	redisDown   []window
	authDown    []window
	phaseNumber uint64
}

// outcome is what one request got.
type outcome struct {
	phase, kind string
	start, end  time.Time
	status      int
	hdr         http.Header
	body        []byte
	err         error // before a response
	bodyErr     error // reading the body
	sent        []byte
	note        string // kind-specific: what was expected
	prev        *outcome
}

func (o outcome) String() string {
	b := o.body
	if len(b) > 200 {
		b = b[:200]
	}
	return fmt.Sprintf("status %d, err %v, body err %v, %v, body %q, note %q", o.status, o.err, o.bodyErr,
		o.end.Sub(o.start).Round(time.Millisecond), b, o.note)
}

// phase runs n requests of the mix with chaosWorkers clients at chaosRate, running each event
// when its fraction of the requests is done.
func (r *chaosRun) phase(name string, n int, events []chaosEvent) {
	r.mu.Lock()
	r.phaseNumber++
	pn := r.phaseNumber
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), chaosMaxIssue)
	defer cancel()
	lim := rate.NewLimiter(chaosRate, chaosWorkers)
	var issued, done atomic.Int64
	var wg sync.WaitGroup
	for i := range chaosWorkers {
		w := newWorker(r, i, pn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.c.CloseIdleConnections()
			for issued.Add(1) <= int64(n) {
				if lim.Wait(ctx) != nil {
					return
				}
				o := w.one(name)
				r.mu.Lock()
				r.outcomes = append(r.outcomes, o)
				r.mu.Unlock()
				done.Add(1)
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	next := 0
	for {
		select {
		case <-finished:
			for ; next < len(events); next++ { // the phase ended early: leave nothing down
				if strings.HasSuffix(events[next].name, "up") {
					r.event(events[next])
				}
			}
			r.t.Logf("%s: %d requests", name, done.Load())
			return
		case <-time.After(5 * time.Millisecond):
		}
		for next < len(events) && float64(done.Load()) >= events[next].at*float64(n) {
			r.event(events[next])
			next++
		}
	}
}

func (r *chaosRun) event(e chaosEvent) {
	now := time.Now()
	e.do()
	r.t.Logf("%s at %s", e.name, now.Format("15:04:05.000"))
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.name {
	case "redis down":
		r.redisDown = append(r.redisDown, window{from: now})
	case "redis up":
		r.redisDown[len(r.redisDown)-1].to = time.Now()
	case "auth service down":
		r.authDown = append(r.authDown, window{from: now})
	case "auth service up":
		r.authDown[len(r.authDown)-1].to = time.Now()
	}
}

// during reports whether o overlapped one of the windows (widened by slack after its end).
func during(ws []window, o outcome, slack time.Duration) bool {
	for _, w := range ws {
		to := w.to
		if to.IsZero() {
			to = time.Now()
		}
		if !o.start.After(to.Add(slack)) && !o.end.Before(w.from) {
			return true
		}
	}
	return false
}

// idle returns the host's usage at rest: the authorization service is bounced (so that no
// kept-alive connection to it, two goroutines each, is counted), a few requests wake the
// runtime sampler, and the gauges must settle.
func (r *chaosRun) idle(auth *authService) hosttest.Usage {
	r.t.Helper()
	auth.Stop()
	auth.Start(r.t)
	c := &http.Client{Timeout: 10 * time.Second}
	for i := 0; i < 5; i++ {
		if st, _, body := hosttest.Fetch(r.t, c, r.h.URL+"/public/idle"); st != 200 {
			r.t.Fatalf("request at rest: %d %s", st, body)
		}
	}
	c.CloseIdleConnections()
	return r.h.SettledUsage(r.t, chaosSample, 30*time.Second)
}

// counters are the test plugins' counters (GET /e2e/stats).
func (r *chaosRun) counters() map[string]int {
	r.t.Helper()
	st, _, body := hosttest.Fetch(r.t, &http.Client{Timeout: 10 * time.Second}, r.h.URL+"/e2e/stats")
	m := map[string]int{}
	if err := json.Unmarshal([]byte(body), &m); err != nil || st != 200 {
		r.t.Fatalf("/e2e/stats: %d %q: %v", st, body, err)
	}
	return m
}

// flood sends n requests back to back from one client address: limit-req (20/s, burst 40 per
// client IP) must refuse some with 429.
func (r *chaosRun) flood(n int) {
	w := newWorker(r, 240, 0)
	defer w.c.CloseIdleConnections()
	for range n {
		o := w.send("chaos", "flood", http.MethodGet, "/public/flood", nil, 10*time.Second)
		r.mu.Lock()
		r.outcomes = append(r.outcomes, o)
		r.mu.Unlock()
	}
}

// worker is one client, with an address of its own (127.0.0.<10+id>) so that limit-req, which
// limits per client IP, admits the steady load.
type worker struct {
	r     *chaosRun
	id    int
	ip    net.IP
	rng   *rand.Rand
	c     *http.Client
	base  string
	phase uint64
	seq   int
}

func newWorker(r *chaosRun, id int, phase uint64) *worker {
	ip := net.IPv4(127, 0, 0, byte(10+id))
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 2, DisableCompression: true}
	return &worker{r: r, id: id, ip: ip, rng: rand.New(rand.NewPCG(r.seed, phase<<32|uint64(id))),
		c: &http.Client{Transport: tr}, base: r.h.URL, phase: phase}
}

func (w *worker) dial() (net.Conn, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: w.ip}, Timeout: 5 * time.Second}
	return d.Dial("tcp", strings.TrimPrefix(w.base, "http://"))
}

// send makes one request and reads the answer (at most 1 MiB of body).
func (w *worker) send(phase, kind, method, path string, body []byte, timeout time.Duration, hdr ...string) outcome {
	o := outcome{phase: phase, kind: kind, start: time.Now(), sent: body}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var rb io.Reader
	if body != nil {
		rb = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.base+path, rb)
	if err != nil {
		o.err = err
		return o
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := w.c.Do(req)
	if err != nil {
		o.err, o.end = err, time.Now()
		return o
	}
	o.status, o.hdr = resp.StatusCode, resp.Header
	o.body, o.bodyErr = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	o.end = time.Now()
	return o
}

const (
	bobKey   = "bob-demo-key"
	aliceKey = "alice-demo-key"
	timeout  = 15 * time.Second // a normal request (the sanitizer build is slow)
	hangFor  = 300 * time.Millisecond
)

// kinds of request, with weights; one picks by the worker's seeded generator.
var chaosKinds = []struct {
	name   string
	weight int
}{
	{"public", 10}, {"read", 10}, {"write", 8}, {"write-denied", 3}, {"no-key", 3},
	{"panic", 6}, {"panic-log", 2}, {"block", 5}, {"hang", 2}, {"stray", 3},
	{"abort-body", 3}, {"abort-response", 1},
	{"bad-ok", 3}, {"bad-reset", 2}, {"bad-close", 2}, {"bad-stall", 1}, {"bad-partial", 2},
	{"ext", 6}, {"ext-deny", 2}, {"hmac", 6}, {"hmac-replay", 2},
}

var chaosWeights = func() int {
	n := 0
	for _, k := range chaosKinds {
		n += k.weight
	}
	return n
}()

func (w *worker) one(phase string) outcome {
	w.seq++
	x := w.rng.IntN(chaosWeights)
	kind := chaosKinds[len(chaosKinds)-1].name
	for _, k := range chaosKinds {
		if x < k.weight {
			kind = k.name
			break
		}
		x -= k.weight
	}
	p := fmt.Sprintf("/chaos/%d/%d/%d", w.phase, w.id, w.seq)
	switch kind {
	case "public":
		return w.send(phase, kind, "GET", "/public"+p, nil, timeout)
	case "read":
		return w.send(phase, kind, "GET", p, nil, timeout, "x-api-key", bobKey)
	case "write":
		body := make([]byte, w.rng.IntN(64<<10))
		for i := range body {
			body[i] = 'a' + byte(w.rng.IntN(26))
		}
		return w.send(phase, kind, "POST", p, body, timeout, "x-api-key", aliceKey)
	case "write-denied":
		return w.send(phase, kind, "POST", p, []byte("x"), timeout, "x-api-key", bobKey)
	case "no-key":
		return w.send(phase, kind, "GET", p, nil, timeout)
	case "panic":
		which := []string{"s:receive", "a:receive", "s:send", "a:send"}[w.rng.IntN(4)]
		o := w.send(phase, kind, "GET", "/public"+p, nil, timeout, "x-e2e-panic", which)
		o.note = which
		return o
	case "panic-log":
		which := []string{"s:log", "a:log"}[w.rng.IntN(2)]
		o := w.send(phase, kind, "GET", "/public"+p, nil, timeout, "x-e2e-panic", which)
		o.note = which
		return o
	case "block":
		return w.send(phase, kind, "GET", "/public"+p, nil, timeout, "x-e2e-sleep", strconv.Itoa(1+w.rng.IntN(50)))
	case "stray": // e2e-async leaves a goroutine using the request for 300ms after its phase
		return w.send(phase, kind, "GET", "/public"+p, nil, timeout, "x-e2e-stray", "1")
	case "hang": // the plugin blocks until the request ends: the client gives up
		return w.send(phase, kind, "GET", "/public"+p, nil, hangFor, "x-e2e-sleep", "30000")
	case "abort-body":
		return w.abortBody(phase, kind, p)
	case "abort-response":
		return w.abortResponse(phase, kind)
	case "bad-ok", "bad-reset", "bad-close", "bad-stall", "bad-partial":
		return w.send(phase, kind, "GET", "/bad/"+strings.TrimPrefix(kind, "bad-"), nil, timeout)
	case "ext":
		return w.send(phase, kind, "GET", "/ext"+p, nil, timeout, "x-api-key", bobKey)
	case "ext-deny":
		return w.send(phase, kind, "GET", "/ext/deny"+p, nil, timeout, "x-api-key", bobKey)
	case "hmac":
		return w.signed(phase, kind, "/hmac"+p, fmt.Sprintf("n-%d-%d-%d-%d", w.r.seed, w.phase, w.id, w.seq))
	case "hmac-replay":
		nonce := fmt.Sprintf("r-%d-%d-%d-%d", w.r.seed, time.Now().UnixNano(), w.id, w.seq)
		first := w.signed(phase, kind, "/hmac"+p, nonce)
		o := w.signed(phase, kind, "/hmac"+p, nonce)
		o.prev = &first
		o.start = first.start
		return o
	}
	panic("unknown kind " + kind)
}

func (w *worker) signed(phase, kind, path, nonce string) outcome {
	date := time.Now().UTC().Format(http.TimeFormat)
	mac := hmac.New(sha256.New, []byte(chaosHMACSecret))
	fmt.Fprintf(mac, "@request-target: get %s\ndate: %s\nx-nonce: %s", path, date, nonce)
	auth := fmt.Sprintf(`Signature keyId="carol-1",algorithm="hmac-sha256",headers="@request-target date x-nonce",signature="%s"`,
		base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return w.send(phase, kind, "GET", path, nil, timeout, "date", date, "x-nonce", nonce, "authorization", auth)
}

// abortBody sends a POST announcing 64 KiB, part of the body, and goes away (close or reset).
func (w *worker) abortBody(phase, kind, path string) outcome {
	o := outcome{phase: phase, kind: kind, start: time.Now()}
	defer func() { o.end = time.Now() }()
	c, err := w.dial()
	if err != nil {
		o.err = err
		return o
	}
	part := w.rng.IntN(8 << 10)
	reset := w.rng.IntN(2) == 0
	o.note = fmt.Sprintf("sent %d of 65536 body bytes, then %s", part, map[bool]string{true: "reset", false: "close"}[reset])
	head := "POST " + path + " HTTP/1.1\r\nHost: chaos\r\nx-api-key: " + aliceKey + "\r\nContent-Length: 65536\r\n\r\n"
	if _, err := io.WriteString(c, head+strings.Repeat("b", part)); err != nil {
		o.err = err
	}
	time.Sleep(time.Duration(w.rng.IntN(20)) * time.Millisecond)
	if reset {
		resetConn(c)
	} else {
		c.Close()
	}
	return o
}

// abortResponse asks for 4 MiB and goes away after the first 64 KiB.
func (w *worker) abortResponse(phase, kind string) outcome {
	o := outcome{phase: phase, kind: kind, start: time.Now()}
	defer func() { o.end = time.Now() }()
	c, err := w.dial()
	if err != nil {
		o.err = err
		return o
	}
	defer resetConn(c)
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, "GET /bytes/4194304 HTTP/1.1\r\nHost: chaos\r\nx-api-key: "+bobKey+"\r\n\r\n"); err != nil {
		o.err = err
		return o
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		o.err = err
		return o
	}
	o.status, o.hdr = resp.StatusCode, resp.Header
	n, err := io.CopyN(io.Discard, resp.Body, 64<<10)
	o.note = fmt.Sprintf("read %d bytes", n)
	o.bodyErr = err
	return o
}

// classify names the class of a correct answer or clean error, or says why o is neither.
func (r *chaosRun) classify(o outcome) (string, error) {
	redisOut := during(r.redisDown, o, redisSlack)
	authOut := during(r.authDown, o, authSlack)
	if o.err != nil && o.kind == "bad-partial" && (errors.Is(o.err, io.EOF) || errors.Is(o.err, syscall.ECONNRESET)) {
		// The upstream reset after its response began but before the response headers left
		// the filter chain (e2e-async holds them for a moment): as in Envoy, the router resets
		// the downstream instead of answering 503.
		return "downstream reset: upstream reset mid-body", nil
	}
	if o.err != nil && o.kind != "hang" && o.kind != "abort-body" {
		return "", fmt.Errorf("no answer")
	}
	if o.bodyErr != nil && o.kind != "bad-partial" {
		return "", fmt.Errorf("broken body")
	}
	body := string(o.body)
	// echoed: a 200 from the echo upstream that saw the request as sent, with consumer.
	echoed := func(consumer string) (string, error) {
		if o.status != 200 {
			return "", fmt.Errorf("status %d, want 200", o.status)
		}
		var e echo.Echoed
		if o.hdr.Get("x-upstream") != "upstream" || json.Unmarshal(o.body, &e) != nil {
			return "", fmt.Errorf("not an echo upstream answer")
		}
		if got := e.Header("x-consumer-name"); got != consumer {
			return "", fmt.Errorf("upstream saw consumer %q, want %q", got, consumer)
		}
		if e.Header("x-api-key") != "" || e.Header("authorization") != "" {
			return "", fmt.Errorf("a credential reached the upstream")
		}
		if o.sent != nil && (e.Body != string(o.sent) || e.BodyLen != len(o.sent)) {
			return "", fmt.Errorf("upstream got a body of %d bytes, %d sent", e.BodyLen, len(o.sent))
		}
		if o.hdr.Get("x-ratelimit-limit") == "" {
			if !redisOut {
				return "", fmt.Errorf("no X-RateLimit-Limit from limit-count while Redis was up")
			}
			return "ok limit-count failed open (redis down)", nil
		}
		return "ok", nil
	}
	local := func(status int, prefix, class string) (string, error) {
		if o.status != status || !strings.HasPrefix(body, prefix) {
			return "", fmt.Errorf("want %d %q", status, prefix)
		}
		return class, nil
	}
	switch o.kind {
	case "public", "block", "panic-log":
		return echoed("")
	case "stray":
		class, err := echoed("")
		return class + " (stray goroutine)", err
	case "read", "ext":
		if o.kind == "ext" && o.status == 403 && authOut {
			return local(403, "authorization service unavailable", "auth service unavailable 403")
		}
		return echoed("bob")
	case "write":
		return echoed("alice")
	case "write-denied":
		return local(403, "", "consumer-restriction 403")
	case "no-key":
		if o.hdr.Get("www-authenticate") == "" {
			return "", fmt.Errorf("401 without WWW-Authenticate")
		}
		return local(401, "missing API key", "key-auth 401")
	case "flood":
		if o.status == 429 {
			return local(429, "Too Many Requests", "limit-req 429 (flood)")
		}
		return echoed("")
	case "panic":
		plugin := map[byte]string{'s': "e2e-sync", 'a': "e2e-async"}[o.note[0]]
		return local(500, "internal error in plugin "+plugin+"\n", "panic 500")
	case "hang":
		if !errors.Is(o.err, context.DeadlineExceeded) || o.end.Sub(o.start) < hangFor {
			return "", fmt.Errorf("a request whose plugin blocks was answered, want the client to time out")
		}
		return "client timed out (plugin blocks)", nil
	case "abort-body":
		return "client aborted mid-body", nil
	case "abort-response":
		if o.status != 200 {
			return "", fmt.Errorf("status %d, want 200", o.status)
		}
		return "client aborted mid-response", nil
	case "bad-ok":
		if o.status != 200 || body != "ok" || o.hdr.Get("x-upstream") != "bad" {
			return "", fmt.Errorf("want 200 ok from the bad upstream")
		}
		return "ok", nil
	case "bad-reset", "bad-close":
		return local(503, "upstream connect error or disconnect/reset before headers", "upstream reset 503")
	case "bad-stall":
		if o.end.Sub(o.start) < 900*time.Millisecond {
			return "", fmt.Errorf("answered before the 1s route timeout")
		}
		return local(504, "upstream request timeout", "upstream timeout 504")
	case "bad-partial":
		if o.status != 200 || o.bodyErr == nil || len(o.body) >= 1000 {
			return "", fmt.Errorf("want the 200 head and a truncated body (the upstream reset mid-body)")
		}
		return "truncated: upstream reset mid-body", nil
	case "ext-deny":
		if authOut && strings.HasPrefix(body, "authorization service unavailable") {
			return local(403, "", "auth service unavailable 403")
		}
		return local(403, authDenied, "auth service denied 403")
	case "hmac":
		if o.status == 503 && redisOut {
			return local(503, "replay check unavailable", "nonce store unavailable 503")
		}
		return echoed("carol")
	case "hmac-replay":
		first := o.prev
		switch {
		case first.status == 503 && redisOut: // the nonce was not recorded
			if o.status == 200 {
				return echoed("carol")
			}
			return local(503, "replay check unavailable", "nonce store unavailable 503")
		case first.status != 200:
			return "", fmt.Errorf("the first of a replayed pair: %s", first)
		case o.status == 503 && redisOut:
			return local(503, "replay check unavailable", "nonce store unavailable 503")
		}
		return local(401, "replayed request", "hmac-auth replay 401")
	}
	return "", fmt.Errorf("unknown kind")
}
