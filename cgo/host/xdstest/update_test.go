package xdstest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// Bounds of the load: clients, and per client a request count and the whole test's time.
const (
	normalClients   = 4
	maxRequestsEach = 20000
	loadDeadline    = 60 * time.Second
	slowDelayMS     = 250
	settleBetween   = 120 * time.Millisecond // steady load between two updates
)

// key is the API key of route version n (key-auth keeps the last three: rotation with overlap).
func key(n int) string { return fmt.Sprintf("apikey-v%04d", n) }

// sample is one request as a client saw it.
type sample struct {
	client     int
	path       string
	sent, recv time.Time
	minHostEnd time.Duration // the host took the route table at least this long before recv
	keyVersion int
	status     int
	rds        int // x-config-version r<N>, 0 when absent
	lds        int // x-listener-version l<N>, 0 when absent
	conn       uint64
	err        error
	gotConns   int // >1: the client retried the request on another connection
}

// update is one applied (or rejected) config change as the updater saw it.
type update struct {
	kind     string // "lds" or "rds"
	n        int    // version number (r<n> or l<n>)
	written  time.Time
	observed time.Time
	rejected bool
	hotLimit int
}

type connInfo struct {
	dialed time.Time
}

// TestUpdatesUnderLoad: while clients send requests without pause, 20 config changes are moved
// into place: route table versions that rotate key-auth keys, add limit-req on /hot, change its
// limits and remove it again, one whose key-auth config Go's parser refuses, and listener
// versions that change a golang filter's config. No request may be lost, and each one must be
// answered by the config current when it started:
//   - route tables: a stream takes the table current when its headers arrive. Version v was
//     current somewhere in [written(v), observed(next accepted version)], and the request
//     reached the host in [sent, recv] ([sent, recv - upstream delay] for the slow client), so
//     the two windows must meet; a client's sequential requests never go back to an older
//     table; the rejected version is never seen; status 200/401/429 must be what version v
//     answers for the key sent.
//   - listeners: a connection stays on the listener version it was accepted by until it is
//     drained (connection: close), so every response of one connection carries one listener
//     version, which was current between the dial and its first response.
func TestUpdatesUnderLoad(t *testing.T) {
	f := newFiles(t)
	lib := hosttest.Require(t, "libgolang.so")
	upstream := hosttest.EchoUpstream(t)
	port := hosttest.FreePort(t)
	rdsPath := f.path("rds.yaml")
	listenerVersion := func(n int) string {
		return lds(fmt.Sprintf("l%d", n), listener("main", port, fmt.Sprintf("l%d", n), "[]", rdsPath, lib))
	}
	routeVersion := func(n, hotLimit int, invalid bool) string {
		var keys []string
		for k := n; k >= 1 && k > n-3; k-- {
			keys = append(keys, key(k))
		}
		return rds(routeSpec{version: fmt.Sprintf("r%d", n), keys: keys, hotLimit: hotLimit, invalidKey: invalid})
	}
	f.put("cds.yaml", cds("c1", map[string]int{"echo": upstream}), true)
	f.put("rds.yaml", routeVersion(1, 0, false), true)
	f.put("lds.yaml", listenerVersion(1), true)
	h := f.start()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	const ldsPrefix = "listener_manager.lds."
	const rdsPrefix = "http.main.rds.routes."
	waitStat(t, h, ldsPrefix+"update_success", 1, 10*time.Second)
	waitStat(t, h, rdsPrefix+"update_success", 1, 10*time.Second)
	goCalls := func() (n, m, d int64) {
		s := h.Stats(t)
		n, _ = strconv.ParseInt(s["moe_host.go.new_http_plugin_config"], 10, 64)
		m, _ = strconv.ParseInt(s["moe_host.go.merge_http_plugin_config"], 10, 64)
		d, _ = strconv.ParseInt(s["moe_host.go.destroy_http_plugin_config"], 10, 64)
		return
	}

	// The schedule: 20 updates; listener versions at 4, 9, 14, 19; the route table update at
	// 10 is invalid; limit-req on /hot appears with route version 5, changes limits through
	// 8 and is gone from 9 on.
	type step struct {
		kind     string
		n        int
		hotLimit int
		invalid  bool
	}
	var schedule []step
	rn, ln := 1, 1
	hotLimits := map[int]int{5: 20, 6: 8, 7: 40, 8: 15}
	for u := 1; u <= 20; u++ {
		switch {
		case u%5 == 4:
			ln++
			schedule = append(schedule, step{kind: "lds", n: ln})
		case u == 10:
			schedule = append(schedule, step{kind: "rds", n: 1000, invalid: true})
		default:
			rn++
			schedule = append(schedule, step{kind: "rds", n: rn, hotLimit: hotLimits[rn]})
		}
	}

	var (
		mu      sync.Mutex
		updates = []update{{kind: "rds", n: 1}, {kind: "lds", n: 1}}
		samples []sample
		conns   sync.Map // uint64 -> connInfo
		connSeq atomic.Uint64
		// published is the newest route version the updater saw applied: clients send its key.
		published atomic.Int64
		stop      atomic.Bool
	)
	published.Store(1)
	start := time.Now()
	deadline := start.Add(loadDeadline)

	newClient := func() *http.Client {
		d := &net.Dialer{Timeout: 2 * time.Second}
		tr := &http.Transport{
			MaxIdleConnsPerHost: 1,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dialed := time.Now()
				c, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				id := connSeq.Add(1)
				conns.Store(id, connInfo{dialed: dialed})
				return &taggedConn{Conn: c, id: id}, nil
			},
		}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	run := func(id int, path string, hostDelay time.Duration, pause time.Duration, hot bool) {
		c := newClient()
		for i := 0; i < maxRequestsEach && !stop.Load() && time.Now().Before(deadline); i++ {
			kv := int(published.Load())
			s := sample{client: id, path: path, keyVersion: kv, minHostEnd: hostDelay}
			req, _ := http.NewRequest(http.MethodGet, base+path, nil)
			req.Header.Set("x-api-key", key(kv))
			if hot {
				req.Header.Set("x-client", "hot")
			}
			trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
				s.gotConns++
				if tc, ok := info.Conn.(*taggedConn); ok {
					s.conn = tc.id
				}
			}}
			req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
			s.sent = time.Now()
			resp, err := c.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				s.status = resp.StatusCode
				s.rds = versionNumber(resp.Header.Get("x-config-version"), "r")
				s.lds = versionNumber(resp.Header.Get("x-listener-version"), "l")
			}
			s.recv = time.Now()
			s.err = err
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
			if pause > 0 {
				time.Sleep(pause)
			}
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < normalClients; i++ {
		wg.Add(1)
		go func(i int) { defer wg.Done(); run(i, "/", 0, 0, false) }(i)
	}
	wg.Add(2)
	go func() { defer wg.Done(); run(100, "/hot", 0, 0, true) }()
	go func() {
		defer wg.Done()
		run(200, fmt.Sprintf("/delay/%d", slowDelayMS), slowDelayMS*time.Millisecond, 0, false)
	}()

	// The updater. Counted from here: one request made the merged per-route config id exist.
	if code, _, _ := get(t, &http.Client{Timeout: 5 * time.Second}, base+"/", "x-api-key", key(1)); code != http.StatusOK {
		t.Fatalf("first request: status %d", code)
	}
	n0, m0, d0 := goCalls()
	rdsSuccess, rdsRejected, ldsSuccess := int64(1), int64(0), int64(1)
	time.Sleep(settleBetween)
	for _, st := range schedule {
		u := update{kind: st.kind, n: st.n, hotLimit: st.hotLimit, rejected: st.invalid}
		u.written = time.Now()
		switch {
		case st.kind == "lds":
			f.put("lds.yaml", listenerVersion(st.n), true)
			ldsSuccess++
			u.observed = waitStat(t, h, ldsPrefix+"update_success", ldsSuccess, 15*time.Second)
		case st.invalid:
			f.put("rds.yaml", routeVersion(st.n, 0, true), false)
			rdsRejected++
			u.observed = waitStat(t, h, rdsPrefix+"update_rejected", rdsRejected, 15*time.Second)
		default:
			f.put("rds.yaml", routeVersion(st.n, st.hotLimit, false), true)
			rdsSuccess++
			u.observed = waitStat(t, h, rdsPrefix+"update_success", rdsSuccess, 15*time.Second)
			published.Store(int64(st.n))
		}
		mu.Lock()
		updates = append(updates, u)
		mu.Unlock()
		time.Sleep(settleBetween)
	}
	time.Sleep(3 * settleBetween)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)

	// ---- every request answered ----
	lost, retried := 0, 0
	for _, s := range samples {
		if s.err != nil {
			lost++
			if lost <= 5 {
				t.Errorf("client %d %s: request lost: %v", s.client, s.path, s.err)
			}
		}
		if s.gotConns > 1 {
			retried++
		}
	}
	// At the end of a listener's drain the connections still open are closed, idle keep-alive
	// ones too (listener_manager_impl.cc drainListener; the gradual drain's "connection: close"
	// reaches most of them first). A GET sent on one at that instant is replayed by the client on
	// a new connection, as Go's transport and browsers do for idempotent requests: answered, not
	// lost. Envoy has the same window; more than a handful means connections close too early.
	if limit := len(samples)/200 + 1; retried > limit {
		t.Errorf("%d requests were retried by the client on a new connection (a connection closed under them), more than %d", retried, limit)
	}

	// ---- each by the config current when it started ----
	rdsWindow := map[int][2]time.Time{}
	ldsWindow := map[int][2]time.Time{}
	hotLimitOf := map[int]int{}
	far := time.Now().Add(time.Hour)
	var lastRDS, lastLDS *update
	for i := range updates {
		u := &updates[i]
		if u.rejected {
			continue
		}
		if u.kind == "rds" {
			if lastRDS != nil {
				w := rdsWindow[lastRDS.n]
				rdsWindow[lastRDS.n] = [2]time.Time{w[0], u.observed}
			}
			rdsWindow[u.n] = [2]time.Time{u.written, far}
			hotLimitOf[u.n] = u.hotLimit
			lastRDS = u
		} else {
			if lastLDS != nil {
				w := ldsWindow[lastLDS.n]
				ldsWindow[lastLDS.n] = [2]time.Time{w[0], u.observed}
			}
			ldsWindow[u.n] = [2]time.Time{u.written, far}
			lastLDS = u
		}
	}
	rdsWindow[1] = [2]time.Time{start.Add(-time.Hour), rdsWindow[1][1]}
	ldsWindow[1] = [2]time.Time{start.Add(-time.Hour), ldsWindow[1][1]}

	bad := 0
	fail := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	lastSeen := map[int]int{}
	connLDS := map[uint64]int{}
	connFirstRecv := map[uint64]time.Time{}
	seenRDS := map[int]int{}
	seenLDS := map[int]int{}
	count429 := 0
	for _, s := range samples {
		if s.err != nil {
			continue
		}
		if s.rds == 0 || s.lds == 0 {
			fail("client %d %s: status %d without version stamps (rds %d, lds %d)", s.client, s.path, s.status, s.rds, s.lds)
			continue
		}
		seenRDS[s.rds]++
		seenLDS[s.lds]++
		w, ok := rdsWindow[s.rds]
		if !ok {
			fail("client %d: answered by route version r%d, never applied (the rejected update is r1000)", s.client, s.rds)
			continue
		}
		hostEnd := s.recv.Add(-s.minHostEnd)
		if w[0].After(hostEnd) || w[1].Before(s.sent) {
			fail("client %d %s: route version r%d (current %v..%v) was not current while the request started (%v..%v)",
				s.client, s.path, s.rds, w[0].Sub(start), w[1].Sub(start), s.sent.Sub(start), hostEnd.Sub(start))
		}
		if s.rds < lastSeen[s.client] {
			fail("client %d: route version went back from r%d to r%d", s.client, lastSeen[s.client], s.rds)
		}
		lastSeen[s.client] = s.rds
		// What version v answers for this key.
		valid := s.keyVersion <= s.rds && s.keyVersion > s.rds-3
		want := http.StatusUnauthorized
		if valid {
			want = http.StatusOK
		}
		limited := s.path == "/hot" && hotLimitOf[s.rds] > 0
		switch {
		case s.status == want:
		case s.status == http.StatusTooManyRequests && valid && limited:
			count429++
		default:
			fail("client %d %s: status %d under route version r%d with key v%d (want %d%s)", s.client, s.path, s.status,
				s.rds, s.keyVersion, want, map[bool]string{true: " or 429", false: ""}[valid && limited])
		}
		// Listener versions per connection.
		if l, ok := connLDS[s.conn]; ok && l != s.lds {
			fail("connection %d: listener version changed from l%d to l%d", s.conn, l, s.lds)
		}
		if _, ok := connLDS[s.conn]; !ok {
			connLDS[s.conn] = s.lds
			connFirstRecv[s.conn] = s.recv
		}
	}
	for id, l := range connLDS {
		ci, _ := conns.Load(id)
		dialed := ci.(connInfo).dialed
		w := ldsWindow[l]
		if w[0].After(connFirstRecv[id]) || w[1].Before(dialed) {
			fail("connection %d: listener version l%d (current %v..%v) was not current when it was accepted (%v..%v)",
				id, l, w[0].Sub(start), w[1].Sub(start), dialed.Sub(start), connFirstRecv[id].Sub(start))
		}
	}
	if count429 == 0 {
		t.Errorf("no 429 on /hot while limit-req was on: the added plugin never ran")
	}

	// ---- stats, as Envoy names them ----
	st := h.Stats(t)
	want := map[string]string{
		ldsPrefix + "update_success":                 strconv.FormatInt(ldsSuccess, 10),
		ldsPrefix + "update_rejected":                "0",
		ldsPrefix + "update_attempt":                 strconv.FormatInt(ldsSuccess, 10),
		rdsPrefix + "update_success":                 strconv.FormatInt(rdsSuccess, 10),
		rdsPrefix + "update_rejected":                "1",
		rdsPrefix + "update_attempt":                 strconv.FormatInt(rdsSuccess+1, 10),
		rdsPrefix + "config_reload":                  strconv.FormatInt(rdsSuccess, 10),
		"listener_manager.listener_modified":         "4",
		"listener_manager.listener_in_place_updated": "4",
		"cluster_manager.cds.update_success":         "1",
	}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("stat %s = %q, want %s", k, st[k], v)
		}
	}
	if dc, _ := strconv.Atoi(st["http.main.downstream_cx_drain_close"]); dc == 0 {
		t.Errorf("http.main.downstream_cx_drain_close = 0: no connection of a replaced listener was drained")
	}

	// ---- old configs destroyed once their last request is gone ----
	// Every connection of replaced listener versions is closed by the end of the drain time;
	// then everything Go created for earlier versions must have been destroyed.
	time.Sleep((drainTimeS + 1) * time.Second)
	n1, m1, d1 := goCalls()
	// The calls that Go answered with config id 0 (the rejected update) created nothing.
	created := (n1 - n0) + (m1 - m0) - rdsRejected
	destroyed := d1 - d0
	// As many ids alive at the end as after the first request (the current listener's two
	// filter configs, the route table's per-route config and its merged id), so every id made
	// for the versions in between was destroyed.
	if created != destroyed {
		t.Errorf("Go configs: %d created and %d destroyed during the updates; the previous versions must all be destroyed (new %d, merge %d)",
			created, destroyed, n1-n0, m1-m0)
	}

	applied := 0
	for _, u := range updates[2:] {
		if !u.rejected {
			applied++
		}
	}
	t.Logf("FIGURES: %d requests sent (%d clients, %v), %d lost, %d retried, %d answers out of time, %d updates applied (%d route tables, %d listeners), %d rejected; 429s on /hot: %d; route versions seen: %v; listener versions seen: %v; connections: %d; Go configs created %d, destroyed %d",
		len(samples), normalClients+2, elapsed.Round(time.Millisecond), lost, retried, bad, applied, rdsSuccess-1, ldsSuccess-1, rdsRejected, count429,
		seenRDS, seenLDS, len(connLDS), created, destroyed)
	if len(seenRDS) < 10 {
		t.Errorf("only %d route versions answered requests: the load did not span the updates", len(seenRDS))
	}
}

// taggedConn numbers the client's connections.
type taggedConn struct {
	net.Conn
	id uint64
}

func versionNumber(v, prefix string) int {
	if !strings.HasPrefix(v, prefix) {
		return 0
	}
	n, err := strconv.Atoi(v[len(prefix):])
	if err != nil {
		return 0
	}
	return n
}
