package filtermanager_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

func tracer(tag string) bothF {
	return bothF{
		recvF{func(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			appendHeader(h, "x-trace", tag)
			return api.Continue
		}},
		sendF{func(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			appendHeader(h, "x-trace", tag)
			return api.Continue
		}},
	}
}

func TestDecodeRunsInOrderAndEncodeInReverse(t *testing.T) {
	for _, block := range []api.Blocking{0, api.BlockReceive | api.BlockSend} {
		a := plugin(t, api.Needs{MayBlock: block}, tracer("a"))
		b := plugin(t, api.Needs{}, tracer("b"))
		c := plugin(t, api.Needs{MayBlock: block}, tracer("c"))
		res := do(t, mustChain(t, a, b, c), fakeenvoy.Request{})
		if got := res.Upstream.Headers["x-trace"]; len(got) != 1 || got[0] != "a,b,c" {
			t.Errorf("block=%v: upstream x-trace = %q, want a,b,c", block, got)
		}
		if got := res.Headers["x-trace"]; len(got) != 1 || got[0] != "c,b,a" {
			t.Errorf("block=%v: response x-trace = %q, want c,b,a", block, got)
		}
	}
}

func TestPhaseRunsSyncUnlessAPluginMayBlock(t *testing.T) {
	cases := []struct {
		name      string
		blocks    []api.Blocking
		wantAsync int
	}{
		{"no plugin blocks", []api.Blocking{0, 0}, 0},
		{"receive blocks", []api.Blocking{0, api.BlockReceive}, 1},
		{"send blocks", []api.Blocking{api.BlockSend, 0}, 1},
		{"both block", []api.Blocking{api.BlockReceive, api.BlockSend}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var names []string
			for _, b := range tc.blocks {
				names = append(names, plugin(t, api.Needs{MayBlock: b}, tracer("x")))
			}
			res := do(t, mustChain(t, names...), fakeenvoy.Request{})
			if res.Continues != tc.wantAsync {
				t.Errorf("async continues = %d, want %d (statuses %v)", res.Continues, tc.wantAsync, res.Statuses)
			}
			if res.Status != 200 {
				t.Errorf("status %d", res.Status)
			}
		})
	}
}

func TestPhaseNobodyImplementsCostsNothing(t *testing.T) {
	calls := 0
	r := plugin(t, api.Needs{}, recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
		calls++
		return api.Continue
	}})
	res := do(t, mustChain(t, r), fakeenvoy.Request{Body: []string{"a", "b"}})
	if calls != 1 {
		t.Fatalf("OnReceive calls = %d", calls)
	}
	// Encode and data phases: no plugin, no header copy, no SDK call at all.
	if res.HeaderCopies != 0 || res.BodyCopies != 0 {
		t.Errorf("copies: headers %d body %d, want 0", res.HeaderCopies, res.BodyCopies)
	}
}

func TestHeadersCopiedOncePerPhase(t *testing.T) {
	reader := recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		for _, k := range []string{"x-a", "x-b", ":path", "x-missing", "X-A"} {
			h.Get(k)
		}
		h.Values("x-b")
		return api.Continue
	}}
	names := []string{plugin(t, api.Needs{}, reader), plugin(t, api.Needs{}, reader), plugin(t, api.Needs{MayBlock: api.BlockReceive}, reader)}
	res := do(t, mustChain(t, names...), fakeenvoy.Request{Headers: [][2]string{{"x-a", "1"}, {"x-b", "2"}}})
	if res.HeaderCopies != 1 {
		t.Errorf("header copies = %d, want 1", res.HeaderCopies)
	}
}

// What is coalesced: all plugin writes of a phase stay in Go and reach Envoy
// once per changed key when the phase ends. Writes that end where they began
// reach Envoy not at all.
func TestHeaderWritesAreCoalesced(t *testing.T) {
	cases := []struct {
		name       string
		steps      []func(h api.HeaderMap)
		wantWrites int
		check      func(t *testing.T, up map[string][]string)
	}{
		{"three plugins set the same header", []func(api.HeaderMap){
			func(h api.HeaderMap) { h.Set("x-v", "1") },
			func(h api.HeaderMap) { h.Set("x-v", "2") },
			func(h api.HeaderMap) { h.Set("X-V", "3") },
		}, 1, func(t *testing.T, up map[string][]string) {
			if up["x-v"][0] != "3" {
				t.Errorf("x-v = %q", up["x-v"])
			}
		}},
		{"set then delete a new header", []func(api.HeaderMap){
			func(h api.HeaderMap) { h.Set("x-tmp", "1") },
			func(h api.HeaderMap) { h.Del("x-tmp") },
		}, 0, nil},
		{"set to the current value", []func(api.HeaderMap){
			func(h api.HeaderMap) { h.Set("x-a", "1") },
		}, 0, nil},
		{"add two values", []func(api.HeaderMap){
			func(h api.HeaderMap) { h.Add("x-m", "1") },
			func(h api.HeaderMap) { h.Add("x-m", "2") },
		}, 2, func(t *testing.T, up map[string][]string) {
			if strings.Join(up["x-m"], ",") != "1,2" {
				t.Errorf("x-m = %q", up["x-m"])
			}
		}},
		{"delete an existing header", []func(api.HeaderMap){
			func(h api.HeaderMap) { h.Del("x-a") },
		}, 1, func(t *testing.T, up map[string][]string) {
			if _, ok := up["x-a"]; ok {
				t.Errorf("x-a still there")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var names []string
			for _, step := range tc.steps {
				step := step
				names = append(names, plugin(t, api.Needs{}, recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
					step(h)
					return api.Continue
				}}))
			}
			res := do(t, mustChain(t, names...), fakeenvoy.Request{Headers: [][2]string{{"x-a", "1"}}})
			if res.HeaderWrites != tc.wantWrites {
				t.Errorf("Envoy header writes = %d, want %d", res.HeaderWrites, tc.wantWrites)
			}
			if tc.check != nil {
				tc.check(t, res.Upstream.Headers)
			}
		})
	}
}

// Header changes are kept in a list recycled between requests once they
// reached Envoy: a request must never see or write the changes of an earlier
// one, whether that one changed a few headers (the list's inline room) or more.
func TestHeaderWritesOfOneRequestNeverReachTheNext(t *testing.T) {
	for _, n := range []int{1, 6} {
		t.Run(fmt.Sprintf("%d headers", n), func(t *testing.T) {
			var reqs atomic.Int64
			name := plugin(t, api.Needs{}, recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
				if reqs.Add(1)%2 == 1 { // odd requests write n headers, even ones another
					for i := range n {
						h.Set(fmt.Sprintf("x-w%d", i), "odd")
					}
					return api.Continue
				}
				h.Set("x-even", "even")
				if v, ok := h.Get("x-w0"); ok {
					t.Errorf("an even request reads x-w0 = %q, written by the request before", v)
				}
				return api.Continue
			}})
			cfg := mustChain(t, name)
			for i := range 6 {
				res := do(t, cfg, fakeenvoy.Request{})
				_, has := res.Upstream.Headers["x-w0"]
				if odd := i%2 == 0; has != odd || (odd && res.HeaderWrites != n) || (!odd && res.HeaderWrites != 1) {
					t.Errorf("request %d: upstream has x-w0 %v, %d header writes", i+1, has, res.HeaderWrites)
				}
			}
		})
	}
}

func TestReadsSeeEarlierPluginsWrites(t *testing.T) {
	w := plugin(t, api.Needs{}, recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		h.Set("x-new", "v")
		h.Del("x-a")
		h.SetPath("/rewritten")
		return api.Continue
	}})
	var got []string
	r := plugin(t, api.Needs{MayBlock: api.BlockReceive}, recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		v, _ := h.Get("x-new")
		_, hasA := h.Get("x-a")
		n := 0
		h.Range(func(k, v string) bool { n++; return true })
		got = append(got, v, h.Path(), map[bool]string{true: "a", false: "-"}[hasA])
		if n != 5 { // 4 pseudo + x-new
			t.Errorf("Range saw %d pairs", n)
		}
		return api.Continue
	}})
	res := do(t, mustChain(t, w, r), fakeenvoy.Request{Headers: [][2]string{{"x-a", "1"}}})
	if strings.Join(got, " ") != "v /rewritten -" {
		t.Errorf("second plugin saw %q", got)
	}
	if res.Upstream.Headers[":path"][0] != "/rewritten" {
		t.Errorf("upstream path %q", res.Upstream.Headers[":path"])
	}
}

func TestBeforeRouteChangesClearTheRouteCache(t *testing.T) {
	router := func(h map[string][]string) (string, string) {
		if len(h["x-canary"]) > 0 {
			return "canary", "c2"
		}
		return "main", "c1"
	}
	for _, mark := range []bool{true, false} {
		br := plugin(t, api.Needs{Phase: api.BeforeRoute}, recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			if mark {
				h.Set("x-canary", "1")
			}
			return api.Continue
		}})
		var route, cluster string
		ar := plugin(t, api.Needs{}, recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			route = ctx.Receiver().Route().RouteName()
			cluster = ctx.Receiver().Route().ClusterName()
			return api.Continue
		}})
		// Listed AfterRoute first: BeforeRoute plugins still run first.
		res := do(t, mustChain(t, ar, br), fakeenvoy.Request{Router: router})
		wantRoute, wantClears := "main", 0
		if mark {
			wantRoute, wantClears = "canary", 1
		}
		if route != wantRoute || res.RouteClears != wantClears {
			t.Errorf("mark=%v: route %q cluster %q clears %d, want %q and %d clears", mark, route, cluster, res.RouteClears, wantRoute, wantClears)
		}
		if res.Upstream.Route != wantRoute {
			t.Errorf("mark=%v: upstream route %q", mark, res.Upstream.Route)
		}
	}
}

func TestLongChainKeepsOrder(t *testing.T) {
	var names []string
	tags := []string{"p1", "p2", "p3", "p4", "p5", "p6", "p7"}
	for i, tag := range tags {
		names = append(names, plugin(t, api.Needs{MayBlock: api.Blocking(i % 2)}, tracer(tag)))
	}
	res := do(t, mustChain(t, names...), fakeenvoy.Request{})
	if got := res.Upstream.Headers["x-trace"][0]; got != strings.Join(tags, ",") {
		t.Errorf("decode order %q", got)
	}
	if got := res.Headers["x-trace"][0]; got != "p7,p6,p5,p4,p3,p2,p1" {
		t.Errorf("encode order %q", got)
	}
}

// Values returns the map's own slice (no copy per call) yet stays a safe view:
// appending to it does not change the map, later writes do not change a slice
// already returned, and ownership is still checked.
func TestHeaderValuesAreStableViews(t *testing.T) {
	var held api.RequestHeaderMap
	var errs []string
	check := func(cond bool, msg string) {
		if !cond {
			errs = append(errs, msg)
		}
	}
	p := plugin(t, api.Needs{}, recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		held = h
		vs := h.Values("x-b")
		check(strings.Join(vs, ",") == "1,2", "initial values "+strings.Join(vs, ","))
		_ = append(vs, "appended")
		check(strings.Join(h.Values("x-b"), ",") == "1,2", "append to the result changed the map")
		h.Add("x-b", "3")
		check(strings.Join(vs, ",") == "1,2", "Add changed a returned slice")
		added := h.Values("x-b")
		check(strings.Join(added, ",") == "1,2,3", "after Add "+strings.Join(added, ","))
		h.Set("x-b", "9")
		check(strings.Join(added, ",") == "1,2,3", "Set changed a returned slice")
		check(strings.Join(h.Values("X-B"), ",") == "9", "after Set")
		return api.Continue
	}})
	res := do(t, mustChain(t, p), fakeenvoy.Request{Headers: [][2]string{{"x-b", "1"}, {"x-b", "2"}}})
	for _, e := range errs {
		t.Error(e)
	}
	if got := strings.Join(res.Upstream.Headers["x-b"], ","); got != "9" {
		t.Errorf("upstream x-b = %q", got)
	}
	func() {
		defer func() {
			if r := recover(); !api.IsStreamError(r) {
				t.Errorf("Values after the phase: recovered %v, want a *StreamError", r)
			}
		}()
		held.Values("x-b")
	}()
}

// Once writes reached Envoy mid-phase (leaving the BeforeRoute group), later
// reads come from the copy with the writes applied: a slice handed out before
// keeps what it said, and every read sees the new values.
func TestReadsAfterAFlushSeeTheWritesAndOldSlicesStay(t *testing.T) {
	var before []string
	var errs []string
	br := plugin(t, api.Needs{Phase: api.BeforeRoute}, recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		before = h.Values("x-b")
		h.Set("x-b", "9") // x-b moves last, the entries after it move up
		h.Del("x-a")
		h.Set("x-c", "new")
		return api.Continue
	}})
	ar := plugin(t, api.Needs{}, recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		if got := strings.Join(before, ","); got != "1" {
			errs = append(errs, "a slice from before the flush now says "+got)
		}
		if got := strings.Join(h.Values("x-b"), ","); got != "9" {
			errs = append(errs, "x-b after the flush: "+got)
		}
		if _, ok := h.Get("x-a"); ok {
			errs = append(errs, "x-a still readable")
		}
		seen := map[string][]string{}
		h.Range(func(k, v string) bool { seen[k] = append(seen[k], v); return true })
		if strings.Join(seen["x-b"], ",") != "9" || strings.Join(seen["x-c"], ",") != "new" || seen["x-a"] != nil {
			errs = append(errs, fmt.Sprintf("Range after the flush: %v", seen))
		}
		if n := h.Len(); n != 7 { // 4 pseudo-headers, x-b, x-c, x-z
			errs = append(errs, fmt.Sprintf("Len %d", n))
		}
		return api.Continue
	}})
	res := do(t, mustChain(t, br, ar), fakeenvoy.Request{Headers: [][2]string{{"x-a", "1"}, {"x-b", "1"}, {"x-z", "z"}}})
	for _, e := range errs {
		t.Error(e)
	}
	if res.RouteClears != 1 || strings.Join(res.Upstream.Headers["x-b"], ",") != "9" {
		t.Errorf("route clears %d, upstream x-b %q", res.RouteClears, res.Upstream.Headers["x-b"])
	}
}

// The copy of one request's headers is recycled with its state when the
// request ends: the next request reads its own.
func TestEachRequestReadsItsOwnHeaders(t *testing.T) {
	var got []string
	name := plugin(t, api.Needs{}, recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		v, _ := h.Get("x-id")
		got = append(got, v)
		h.Set("x-seen", v)
		return api.Continue
	}})
	cfg := mustChain(t, name)
	for i := range 4 {
		res := do(t, cfg, fakeenvoy.Request{Headers: [][2]string{{"x-id", fmt.Sprint(i)}}})
		if up := res.Upstream.Headers["x-seen"]; len(up) != 1 || up[0] != fmt.Sprint(i) {
			t.Errorf("request %d: upstream x-seen %q", i, up)
		}
	}
	if strings.Join(got, ",") != "0,1,2,3" {
		t.Errorf("plugin read x-id %q", got)
	}
}
