package xdstest

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// setup is a host on LDS, RDS and CDS files with route version r1 and listener version l1.
type setup struct {
	f        *files
	h        *hosttest.Host
	lib      string
	port     int
	upstream int
	base     string
}

func newSetup(t *testing.T) *setup {
	s := &setup{f: newFiles(t), lib: hosttest.Require(t, "libgolang.so"), upstream: hosttest.EchoUpstream(t), port: hosttest.FreePort(t)}
	s.f.put("cds.yaml", cds("c1", map[string]int{"echo": s.upstream}), true)
	s.f.put("rds.yaml", rds(routeSpec{version: "r1", keys: []string{key(1)}}), true)
	s.f.put("lds.yaml", s.listeners("l1"), true)
	s.h = s.f.start()
	s.base = fmt.Sprintf("http://127.0.0.1:%d", s.port)
	waitStat(t, s.h, "listener_manager.lds.update_success", 1, 10*time.Second)
	return s
}

func (s *setup) listeners(stamp string) string {
	return lds(stamp, listener("main", s.port, stamp, "[]", s.f.path("rds.yaml"), s.lib))
}

func (s *setup) destroyed(t *testing.T) int64 {
	return s.h.Counter(t, "moe_host.go.destroy_http_plugin_config")
}

// A route table or listener version replaced while a request still runs on it: the request
// finishes on it, and its Go configs are destroyed only after that request (Envoy: a stream
// holds its route table and its filter config; ~RoutePluginConfig and ~FilterConfig call
// envoyGoFilterDestroyHttpPluginConfig).
func TestOldVersionDestroyedAfterItsLastRequest(t *testing.T) {
	s := newSetup(t)
	c := &http.Client{Timeout: 10 * time.Second}
	if code, _, _ := get(t, c, s.base+"/", "x-api-key", key(1)); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	type result struct {
		code int
		hdr  http.Header
	}
	slow := func(k string) chan result {
		ch := make(chan result, 1)
		go func() {
			code, hdr, _ := get(t, &http.Client{Timeout: 10 * time.Second}, s.base+"/delay/1500", "x-api-key", k)
			ch <- result{code, hdr}
		}()
		time.Sleep(300 * time.Millisecond) // the request is in the upstream now
		return ch
	}

	// Route table r1 -> r2 while a request runs on r1.
	inflight := slow(key(1))
	before := s.destroyed(t)
	s.f.put("rds.yaml", rds(routeSpec{version: "r2", keys: []string{key(2)}}), true)
	waitStat(t, s.h, "http.main.rds.routes.update_success", 2, 10*time.Second)
	if code, hdr, _ := get(t, c, s.base+"/", "x-api-key", key(2)); code != http.StatusOK || hdr.Get("x-config-version") != "r2" {
		t.Fatalf("after the update: status %d, version %q", code, hdr.Get("x-config-version"))
	}
	time.Sleep(200 * time.Millisecond)
	if d := s.destroyed(t); d != before {
		t.Errorf("r1's configs destroyed (%d calls) while a request still runs on r1", d-before)
	}
	r := <-inflight
	if r.code != http.StatusOK || r.hdr.Get("x-config-version") != "r1" {
		t.Errorf("the request that started on r1: status %d, version %q (want 200, r1)", r.code, r.hdr.Get("x-config-version"))
	}
	// r1's per-route config id and its merged id.
	tb.Poll(5*time.Second, func() bool { return s.destroyed(t) >= before+2 })
	if d := s.destroyed(t) - before; d != 2 {
		t.Errorf("after r1's last request: %d destroy calls, want 2 (its per-route config and the merged id)", d)
	}

	// Listener l1 -> l2 while a request runs on an l1 connection.
	inflight = slow(key(2))
	before = s.destroyed(t)
	s.f.put("lds.yaml", s.listeners("l2"), true)
	waitStat(t, s.h, "listener_manager.lds.update_success", 2, 10*time.Second)
	// A new connection is accepted by l2.
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	if code, hdr, _ := get(t, fresh, s.base+"/", "x-api-key", key(2)); code != http.StatusOK || hdr.Get("x-listener-version") != "l2" {
		t.Fatalf("new connection after the listener update: status %d, listener %q", code, hdr.Get("x-listener-version"))
	}
	before2 := s.destroyed(t) // the merged id of l1's parent was replaced: counted from here
	r = <-inflight
	if r.code != http.StatusOK || r.hdr.Get("x-listener-version") != "l1" {
		t.Errorf("the request that started on l1: status %d, listener %q (want 200, l1)", r.code, r.hdr.Get("x-listener-version"))
	}
	if d := s.destroyed(t); d != before2 {
		t.Errorf("l1's filter configs destroyed before its connections were gone (%d calls)", d-before2)
	}
	// l1's connections close by the end of the drain time; then its two filter configs go.
	tb.Poll((drainTimeS+3)*time.Second, func() bool { return s.destroyed(t) >= before2+2 })
	if d := s.destroyed(t) - before2; d != 2 {
		t.Errorf("after l1's drain: %d destroy calls, want 2 (l1's two golang filter configs); %d since the update", d, s.destroyed(t)-before)
	}
	if g := s.h.Counter(t, "listener_manager.total_listeners_draining"); g != 0 {
		t.Errorf("total_listeners_draining = %d after the drain time", g)
	}
}

// Rejected updates: Go's parser refusing a listener's golang config, a file moectl cannot
// parse, a resource of the wrong type; the previous version keeps serving each time, and the
// stats count them as Envoy does (update_rejected, update_failure).
func TestRejectedUpdatesKeepThePreviousVersion(t *testing.T) {
	s := newSetup(t)
	c := &http.Client{Timeout: 5 * time.Second}
	check := func(what string) {
		t.Helper()
		code, hdr, _ := get(t, c, s.base+"/", "x-api-key", key(1))
		if code != http.StatusOK || hdr.Get("x-listener-version") != "l1" || hdr.Get("x-config-version") != "r1" {
			t.Errorf("after %s: status %d, listener %q, routes %q (want 200 l1 r1)", what, code,
				hdr.Get("x-listener-version"), hdr.Get("x-config-version"))
		}
	}
	check("start")

	// A listener whose moe config Go refuses (an unknown plugin field).
	bad := lds("l2", listener("main", s.port, "l2", `[{name: key-auth, config: {no_such_field: 1}}]`, s.f.path("rds.yaml"), s.lib))
	s.f.put("lds.yaml", bad, false)
	waitStat(t, s.h, "listener_manager.lds.update_rejected", 1, 10*time.Second)
	check("a listener Go rejects")
	if !strings.Contains(s.h.Output(), "lds: listener 'main' config rejected") {
		t.Errorf("no log line for the rejected listener:\n%s", tail(s.h.Output()))
	}

	// Not YAML at all: update_failure (the file could not be loaded).
	s.f.put("lds.yaml", "resources: [\n", false)
	waitStat(t, s.h, "listener_manager.lds.update_failure", 1, 10*time.Second)
	check("an unparseable file")

	// A cluster in the route table's file: the resource decoder refuses it.
	s.f.put("rds.yaml", cds("c2", map[string]int{"echo": s.upstream}), false)
	waitStat(t, s.h, "http.main.rds.routes.update_rejected", 1, 10*time.Second)
	check("a route file holding a cluster")

	st := s.h.Stats(t)
	for k, v := range map[string]string{
		"listener_manager.lds.update_attempt":  "3",
		"listener_manager.lds.update_success":  "1",
		"listener_manager.lds.update_rejected": "1",
		"listener_manager.lds.update_failure":  "1",
		"listener_manager.listener_modified":   "0",
		"http.main.rds.routes.update_success":  "1",
	} {
		if st[k] != v {
			t.Errorf("%s = %q, want %s", k, st[k], v)
		}
	}

	// A good version after the bad ones is applied.
	s.f.put("lds.yaml", s.listeners("l3"), true)
	waitStat(t, s.h, "listener_manager.lds.update_success", 2, 10*time.Second)
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	if code, hdr, _ := get(t, fresh, s.base+"/", "x-api-key", key(1)); code != http.StatusOK || hdr.Get("x-listener-version") != "l3" {
		t.Errorf("after a good listener: status %d, listener %q", code, hdr.Get("x-listener-version"))
	}
}

// CDS: a cluster replaced (new endpoint) and removed; RDS routes follow; a listener removed
// by LDS stops accepting.
func TestClustersAndListenersComeAndGo(t *testing.T) {
	s := newSetup(t)
	c := &http.Client{Timeout: 5 * time.Second}
	other := hosttest.EchoUpstream(t)
	// The route table names cluster "second", which does not exist yet: 503 (cluster_not_found).
	s.f.put("rds.yaml", rds(routeSpec{version: "r2", keys: []string{key(1)}, cluster: "second"}), true)
	waitStat(t, s.h, "http.main.rds.routes.update_success", 2, 10*time.Second)
	if code, _, _ := get(t, c, s.base+"/", "x-api-key", key(1)); code != http.StatusServiceUnavailable {
		t.Errorf("route to a cluster not yet there: status %d, want 503", code)
	}
	s.f.put("cds.yaml", cds("c2", map[string]int{"echo": s.upstream, "second": other}), true)
	waitStat(t, s.h, "cluster_manager.cds.update_success", 2, 10*time.Second)
	if code, _, body := get(t, c, s.base+"/", "x-api-key", key(1)); code != http.StatusOK || !strings.Contains(body, fmt.Sprintf(":%d", other)) && !strings.Contains(body, "upstream") {
		t.Errorf("after CDS added the cluster: status %d, body %q", code, body)
	}
	// The same file again: nothing changes (same hash).
	s.f.put("cds.yaml", cds("c3", map[string]int{"echo": s.upstream, "second": other}), true)
	waitStat(t, s.h, "cluster_manager.cds.update_success", 3, 10*time.Second)
	// Removed: 503 again.
	s.f.put("cds.yaml", cds("c4", map[string]int{"echo": s.upstream}), true)
	waitStat(t, s.h, "cluster_manager.cds.update_success", 4, 10*time.Second)
	if code, _, _ := get(t, c, s.base+"/", "x-api-key", key(1)); code != http.StatusServiceUnavailable {
		t.Errorf("route to a removed cluster: status %d, want 503", code)
	}
	st := s.h.Stats(t)
	for k, v := range map[string]string{
		"cluster_manager.cluster_added":    "2",
		"cluster_manager.cluster_modified": "0",
		"cluster_manager.cluster_removed":  "1",
		"cluster_manager.active_clusters":  "1",
	} {
		if st[k] != v {
			t.Errorf("%s = %q, want %s", k, st[k], v)
		}
	}

	// A second listener added, then the first removed.
	port2 := hosttest.FreePort(t)
	both := lds("l2", listener("main", s.port, "l2", "[]", s.f.path("rds.yaml"), s.lib),
		listener("second", port2, "l2b", "[]", s.f.path("rds.yaml"), s.lib))
	s.f.put("rds.yaml", rds(routeSpec{version: "r3", keys: []string{key(1)}}), true)
	waitStat(t, s.h, "http.main.rds.routes.update_success", 3, 10*time.Second)
	s.f.put("lds.yaml", both, true)
	waitStat(t, s.h, "listener_manager.lds.update_success", 2, 10*time.Second)
	code, hdr, _ := get(t, &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}, fmt.Sprintf("http://127.0.0.1:%d/", port2), "x-api-key", key(1))
	if code != http.StatusOK || hdr.Get("x-listener-version") != "l2b" || hdr.Get("x-config-version") != "r3" {
		t.Errorf("second listener (sharing the RDS table): status %d, listener %q, routes %q", code, hdr.Get("x-listener-version"), hdr.Get("x-config-version"))
	}
	s.f.put("lds.yaml", lds("l3", listener("second", port2, "l2b", "[]", s.f.path("rds.yaml"), s.lib)), true)
	waitStat(t, s.h, "listener_manager.lds.update_success", 3, 10*time.Second)
	if !tb.Poll(5*time.Second, func() bool {
		_, err := (&http.Client{Timeout: time.Second, Transport: &http.Transport{}}).Get(s.base + "/")
		return err != nil
	}) {
		t.Fatalf("the removed listener still accepts")
	}
	if v := s.h.Counter(t, "listener_manager.listener_removed"); v != 1 {
		t.Errorf("listener_removed = %d, want 1", v)
	}
}

// watched_directory: the file is re-read when any file is moved into the directory (how a
// Kubernetes ConfigMap volume swaps its ..data link), not only onto the path.
func TestWatchedDirectory(t *testing.T) {
	f := newFiles(t)
	lib := hosttest.Require(t, "libgolang.so")
	upstream := hosttest.EchoUpstream(t)
	port := hosttest.FreePort(t)
	dir := f.path("routes")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f.put("cds.yaml", cds("c1", map[string]int{"echo": upstream}), true)
	f.put("routes/rds.yaml", rds(routeSpec{version: "r1", keys: []string{key(1)}}), true)
	l := strings.Replace(listener("main", port, "l1", "[]", f.path("routes/rds.yaml"), lib),
		"path_config_source: {path: "+f.path("routes/rds.yaml")+"}",
		"path_config_source: {path: "+f.path("routes/rds.yaml")+", watched_directory: {path: "+dir+"}}", 1)
	f.put("lds.yaml", lds("l1", l), true)
	h := f.start()
	waitStat(t, h, "http.main.rds.routes.update_success", 1, 10*time.Second)
	// Written in place (no event), then another file moved into the directory: reloaded.
	if err := os.WriteFile(f.path("routes/rds.yaml"), []byte(rds(routeSpec{version: "r2", keys: []string{key(1)}})), 0o644); err != nil {
		t.Fatal(err)
	}
	f.put("routes/trigger", "x", false)
	waitStat(t, h, "http.main.rds.routes.update_success", 2, 10*time.Second)
	code, hdr, _ := get(t, &http.Client{Timeout: 5 * time.Second}, fmt.Sprintf("http://127.0.0.1:%d/", port), "x-api-key", key(1))
	if code != http.StatusOK || hdr.Get("x-config-version") != "r2" {
		t.Errorf("status %d, version %q, want 200 r2", code, hdr.Get("x-config-version"))
	}
}
