package conformance

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// env is what the scenario tests share: one host with all listeners and three upstreams.
type env struct {
	h         *hostProc
	a1, a2, b *echo.Server
	deadPort  int
	// strayPort is a closed loopback port that is no host of any cluster: an override host
	// Envoy does not find in the cluster (tests talk to loopback only).
	strayPort  int
	idSeq      atomic.Int64
	statPrefix string
}

var mainListeners = []string{"main", "smallbuf", "echo", "passthrough", "unregistered", "routeconfig", "rctable", "metric"}

func newEnv(t *testing.T) *env {
	t.Helper()
	findBinaries(t) // skip early, before starting upstreams
	e := &env{a1: startUpstream(t, "a1"), a2: startUpstream(t, "a2"), b: startUpstream(t, "b")}
	e.deadPort = hosttest.ClosedPort(t)
	e.strayPort = hosttest.ClosedPort(t)
	e.h = startHost(t, hostSpec{tmpl: "main", listeners: mainListeners, data: map[string]any{
		"A1": e.a1.Port, "A2": e.a2.Port, "B": e.b.Port, "Dead": e.deadPort,
	}})
	return e
}

func (e *env) id(name string) string {
	return fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano()%1e9, e.idSeq.Add(1))
}

func decodeEcho(t testing.TB, r *resp) *echoReply {
	t.Helper()
	var rep echoReply
	if err := json.Unmarshal([]byte(r.body), &rep); err != nil {
		t.Fatalf("upstream echo: status %d, body %q is not the echo JSON: %v", r.status, r.body, err)
	}
	return &rep
}

func modes() []string { return []string{"sync", "async"} }

func hdrs(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func merge(a map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range hdrs(kv...) {
		m[k] = v
	}
	return m
}

func (e *env) panicCount(t testing.TB, listener string) int64 {
	return e.h.stats(t)["http."+listener+".golang.panic_error"]
}

// TestConformance runs the scenarios of Envoy's contrib/golang/filters/http/test/
// golang_integration_test.cc (and a few more) against one moe-host process.
func TestConformance(t *testing.T) {
	e := newEnv(t)
	h := e.h

	t.Run("Echo", func(t *testing.T) {
		r := h.must(t, req{listener: "echo", method: "POST", path: "/echo", body: "x"})
		if r.status != 403 || r.body != "echo from go, path: /echo\r\n" {
			t.Fatalf("got %d %q, want 403 %q", r.status, r.body, "echo from go, path: /echo\r\n")
		}
		// local reply defaults (source/common/http/utility.cc prepareLocalReply)
		if r.get("content-type") != "text/plain" || r.get("content-length") != strconv.Itoa(len(r.body)) {
			t.Errorf("content-type %q content-length %q, want text/plain and %d", r.get("content-type"), r.get("content-length"), len(r.body))
		}
	})

	t.Run("Passthrough", func(t *testing.T) {
		r := h.must(t, req{listener: "passthrough", method: "POST", path: "/chunked?n=2&size=3&delay=20", body: "helloworld"})
		if r.status != 200 || r.body != "aaabbb" {
			t.Fatalf("got %d %q, want 200 aaabbb", r.status, r.body)
		}
		r = h.must(t, req{listener: "passthrough", method: "POST", path: "/echo", body: "helloworld"})
		rep := decodeEcho(t, r)
		if rep.Method != "POST" || rep.Body != "helloworld" || rep.URI != "/echo" {
			t.Fatalf("upstream saw %s %s %q", rep.Method, rep.URI, rep.Body)
		}
	})

	// The router's direct_response goes through the Go filter's encode path.
	t.Run("DirectResponse", func(t *testing.T) {
		for _, mode := range modes() {
			r := h.must(t, req{listener: "main", path: "/direct", headers: hdrs("x-test-mode", mode, "x-test-basic", "1", "x-test-ed-mode", "upper")})
			if r.status != 299 || r.body != "DIRECT BODY" || r.get("rsp-response-code-details") != "direct_response" || r.get("rsp-route-name") != "direct_route" {
				t.Errorf("%s: got %d %q details %q route %q, want 299 \"DIRECT BODY\" direct_response direct_route", mode, r.status, r.body, r.get("rsp-response-code-details"), r.get("rsp-route-name"))
			}
		}
	})

	t.Run("PluginNotFound", func(t *testing.T) {
		r := h.must(t, req{listener: "unregistered", path: "/status/200?body=status+200"})
		if r.status != 200 || r.body != "status 200" {
			t.Fatalf("got %d %q, want 200 'status 200'", r.status, r.body)
		}
	})

	t.Run("Basic", func(t *testing.T) { testBasic(t, e) })
	t.Run("DataBuffer", func(t *testing.T) { testDataBuffer(t, e) })
	t.Run("BufferApi", func(t *testing.T) { testBufferAPI(t, e) })
	t.Run("LocalReply", func(t *testing.T) { testLocalReply(t, e) })
	t.Run("PanicRecover", func(t *testing.T) { testPanicRecover(t, e) })
	t.Run("ActionWithoutData", func(t *testing.T) { testActionWithoutData(t, e) })
	t.Run("AddData", func(t *testing.T) { testAddData(t, e) })
	t.Run("BufferInjectData", func(t *testing.T) { testInjectData(t, e) })
	t.Run("BufferExceedLimit", func(t *testing.T) { testBufferExceedLimit(t, e) })
	t.Run("RouteConfig", func(t *testing.T) { testRouteConfig(t, e) })
	t.Run("RouteCache", func(t *testing.T) { testRouteCache(t, e) })
	t.Run("ClusterHeader", func(t *testing.T) { testClusterHeader(t, e) })
	t.Run("Property", func(t *testing.T) { testProperty(t, e) })
	t.Run("AccessLog", func(t *testing.T) { testAccessLog(t, e) })
	t.Run("Metric", func(t *testing.T) { testMetric(t, e) })
	t.Run("DynamicMetadata", func(t *testing.T) { testDynamicMetadata(t, e) })
	t.Run("FilterState", func(t *testing.T) { testFilterState(t, e) })
	t.Run("Secrets", func(t *testing.T) { testSecrets(t, e) })
	t.Run("SetUpstreamOverrideHost", func(t *testing.T) { testOverrideHost(t, e) })
	t.Run("DrainConnectionUponCompletion", func(t *testing.T) { testDrain(t, e) })
	t.Run("Trailers", func(t *testing.T) { testTrailers(t, e) })
	t.Run("HeaderInjection", func(t *testing.T) { testHeaderInjection(t, e) })
	t.Run("HeaderNameChars", func(t *testing.T) { testHeaderNameChars(t, e) })
	t.Run("Lifecycle", func(t *testing.T) { testLifecycle(t, e) })
	t.Run("StrayGoroutine", func(t *testing.T) { testStray(t, e) })
	t.Run("ClientDisconnect", func(t *testing.T) { testClientDisconnect(t, e) })
	t.Run("HeaderMap", func(t *testing.T) { testHeaderMap(t, e) })
	t.Run("PanicInLifecycleCallbacks", func(t *testing.T) { testLifecyclePanics(t, e) })
	t.Run("Codec", func(t *testing.T) { testCodec(t, e) })
	t.Run("Logging", func(t *testing.T) { testLogging(t, e) })
	t.Run("Workers", func(t *testing.T) { testWorkers(t, e) })
	t.Run("LargeBodies", func(t *testing.T) { testLargeBodies(t, e) })
	t.Run("Pipelining", func(t *testing.T) { testPipelining(t, e) })
	t.Run("AsyncDoesNotBlockWorker", func(t *testing.T) { testAsyncConcurrency(t, e) })
	t.Run("Crossings", func(t *testing.T) { testCrossings(t, e) })

	// whatever happened above, the host must still serve
	r := h.must(t, req{listener: "main", path: "/status/200"})
	if r.status != 200 {
		t.Fatalf("final request: %d", r.status)
	}
	if c := h.ready(t); c != 200 {
		t.Fatalf("final /ready: %d", c)
	}
}

// ---------------------------------------------------------------- Basic / Async / Sleep

func testBasic(t *testing.T, e *env) {
	h := e.h
	cases := []struct {
		name string
		ctl  map[string]string
	}{
		{"Basic", hdrs()},
		{"Async", hdrs("x-test-mode", "async")},
		{"Sleep", hdrs("x-test-sleep-ms", "30")},
		{"DataSleep", hdrs("x-test-data-sleep-ms", "30")},
		{"Async_Sleep", hdrs("x-test-mode", "async", "x-test-sleep-ms", "30")},
		{"Async_DataSleep", hdrs("x-test-mode", "async", "x-test-data-sleep-ms", "30")},
		{"DataBuffer_DecodeHeader", hdrs("x-test-dh-ret", "StopAndBuffer")},
		{"Async_DataBuffer_DecodeHeader", hdrs("x-test-mode", "async", "x-test-dh-ret", "StopAndBuffer")},
		{"DataBuffer_DecodeData", hdrs("x-test-dd-mode", "buffer")},
		{"Async_DataBuffer_DecodeData", hdrs("x-test-mode", "async", "x-test-dd-mode", "buffer")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctl := merge(c.ctl, "x-test-basic", "1", "x-test-header-0", "foo", "x-test-header-1", "bar", "existed-header", "foo",
				"x-echo-resp-x-test-header-0", "foo", "x-echo-resp-x-test-header-1", "bar", "x-echo-resp-existed-header", "foo")
			if ctl["x-test-dd-mode"] == "" {
				ctl["x-test-dd-mode"] = "upper"
			}
			r := h.must(t, req{listener: "main", method: "POST", path: "/test?x=1", headers: ctl, body: "helloworld",
				trailers: map[string]string{"x-test-trailer-0": "foo", "existed-trailer": "foo", "x-test-trailer-1": "foo"}})
			if r.status != 200 {
				t.Fatalf("status %d body %q", r.status, r.body)
			}
			rep := decodeEcho(t, r)
			wantBody := "HELLOWORLD"
			if c.ctl["x-test-dd-mode"] == "buffer" {
				// StopAndBuffer on the first (only) chunk keeps it with the host untouched; with
				// trailers following, Go gets no final data call (golang_filter.cc doTrailer,
				// WaitingAllData with an empty buffer -> continueDoData + doTrailerGo).
				wantBody = "helloworld"
			}
			// request side, as the upstream saw it
			checks := []struct{ what, got, want string }{
				{"x-test-header-0", rep.header("x-test-header-0"), "foo"},
				{"test-x-set-header-0", rep.header("test-x-set-header-0"), "foo"},
				{"x-test-header-1 (removed)", rep.header("x-test-header-1"), ""},
				{"existed-header", strings.Join(rep.headerValues("existed-header"), ","), "foo,bar"},
				{"newly-added-header", strings.Join(rep.headerValues("newly-added-header"), ","), "foo,bar"},
				{"req-route-name", rep.header("req-route-name"), "default_route"},
				{"req-async", rep.header("req-async"), strconv.FormatBool(c.ctl["x-test-mode"] == "async")},
				{"req-upstream-known (decode phase)", rep.header("req-upstream-known"), "false"},
				{"req-response-code-known (decode phase)", rep.header("req-response-code-known"), "false"},
				{"req-getraw (GetRaw: first value, missing = empty)", rep.header("req-getraw"), "foo|foo|"},
				{"body", rep.Body, wantBody},
				// response side
				{"resp x-test-header-0", r.get("x-test-header-0"), "foo"},
				{"resp test-x-set-header-0", r.get("test-x-set-header-0"), "foo"},
				{"resp x-test-header-1 (removed)", r.get("x-test-header-1"), ""},
				{"resp existed-header", strings.Join(r.header.Values("existed-header"), ","), "foo,bar"},
				{"resp newly-added-header", strings.Join(r.header.Values("newly-added-header"), ","), "foo,bar"},
				{"test-req-body-length", r.get("test-req-body-length"), "10"},
				{"rsp-route-name", r.get("rsp-route-name"), "default_route"},
				{"rsp-protocol", r.get("rsp-protocol"), "HTTP/1.1"},
				{"rsp-response-code", r.get("rsp-response-code"), "200"},
				{"rsp-response-code-details", r.get("rsp-response-code-details"), "via_upstream"},
				{"rsp-upstream-cluster", r.get("rsp-upstream-cluster"), "backend_a"},
				{"rsp-attempt-count", r.get("rsp-attempt-count"), "1"},
				{"rsp-status", r.get("rsp-status"), "200"},
				{"test-method", r.get("test-method"), "POST"},
				{"test-path", r.get("test-path"), "/test?x=1"},
				{"test-host", r.get("test-host"), "test.com"},
				{"test-scheme", r.get("test-scheme"), "http"},
				{"test-log-level", r.get("test-log-level"), "info"},
				{"test-ssl", r.get("test-ssl"), "false"},
			}
			if c.name == "Async_DataBuffer_DecodeData" {
				// Trailers that arrive while Go processes a data chunk it then StopAndBuffers: the
				// trailer phase's Continue runs continueDoData with do_end_stream_=true (set by
				// processTrailer, processor_state.h) and injects the held chunk with end_stream=true
				// before continueDecoding delivers the trailers (golang_filter.cc
				// continueStatusInternal, ProcessingTrailer). What the upstream then gets is not
				// defined by Envoy, so the trailers are not checked here.
				t.Logf("async StopAndBuffer + trailers: upstream trailers %v", rep.Trailers)
			} else {
				checks = append(checks, []struct{ what, got, want string }{
					{"existed-trailer", strings.Join(rep.trailer("existed-trailer"), ","), "foo,bar"},
					{"x-test-trailer-0", strings.Join(rep.trailer("x-test-trailer-0"), ","), "bar"},
					{"x-test-trailer-1 (removed)", strings.Join(rep.trailer("x-test-trailer-1"), ","), ""},
					{"x-test-trailer-2", strings.Join(rep.trailer("x-test-trailer-2"), ","), "bar"},
				}...)
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
			if la := rep.header("req-downstream-local-address"); la != h.addr("main") {
				t.Errorf("req-downstream-local-address = %q, want %q", la, h.addr("main"))
			}
			if ra := rep.header("req-downstream-remote-address"); !strings.HasPrefix(ra, "127.0.0.1:") {
				t.Errorf("req-downstream-remote-address = %q, want 127.0.0.1:port", ra)
			}
			up := r.get("rsp-upstream-host")
			if up != fmt.Sprintf("127.0.0.1:%d", e.a1.Port) && up != fmt.Sprintf("127.0.0.1:%d", e.a2.Port) {
				t.Errorf("rsp-upstream-host = %q, want a backend_a endpoint", up)
			}
			if w := rep.header("req-worker-id"); w != "0" && w != "1" {
				t.Errorf("worker id %q, want 0 or 1 (--concurrency 2)", w)
			}

			// response body through Go
			r = h.must(t, req{listener: "main", path: "/chunked?n=2&size=4&delay=10", headers: hdrs("x-test-mode", c.ctl["x-test-mode"],
				"x-test-sleep-ms", c.ctl["x-test-sleep-ms"], "x-test-data-sleep-ms", c.ctl["x-test-data-sleep-ms"], "x-test-ed-mode", "upper")})
			if r.status != 200 || r.body != "AAAABBBB" {
				t.Fatalf("response body through Go: %d %q, want 200 AAAABBBB", r.status, r.body)
			}
		})
	}
}

// ---------------------------------------------------------------- data buffer semantics

// sendChunked writes a chunked request on a raw connection, one chunk at a time. After chunk i it
// waits until Go has seen goCalls[i] decode-data calls in total (so every chunk arrives as its own
// frame), then ends the body and returns the response.
func sendChunked(t *testing.T, h *hostProc, id string, path string, ctl map[string]string, chunks []string, goCalls []int) (*http.Response, string) {
	t.Helper()
	rc := h.dial(t, "main")
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nhost: test.com\r\ntransfer-encoding: chunked\r\nx-test-id: %s\r\n", path, id)
	for k, v := range ctl {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	rc.write(b.String())
	for i, c := range chunks {
		rc.chunk(c)
		want := goCalls[i]
		h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return countEvents(ev, "decode-data ") >= want })
		time.Sleep(20 * time.Millisecond) // a chunk that Go must not see would arrive by now
	}
	rc.write("0\r\n\r\n")
	res, body, err := rc.readResponse("POST")
	if err != nil {
		h.alive(t)
		t.Fatalf("response: %v", err)
	}
	return res, body
}

type dataEvent struct {
	len  int
	end  bool
	data string
}

func dataEvents(ev []string, prefix string) []dataEvent {
	var out []dataEvent
	for _, e := range ev {
		if !strings.HasPrefix(e, prefix+" ") {
			continue
		}
		var d dataEvent
		rest := strings.TrimPrefix(e, prefix+" ")
		fmt.Sscanf(rest, "len=%d end=%t", &d.len, &d.end)
		if i := strings.Index(rest, "data="); i >= 0 {
			d.data = rest[i+5:]
		}
		out = append(out, d)
	}
	return out
}

func testDataBuffer(t *testing.T, e *env) {
	h := e.h
	chunks := []string{"abc", "def", "ghi"}
	for _, mode := range modes() {
		// StopAndBuffer in the data phase: the first chunk stays with the host; Go's final call sees
		// only the later chunks (ABI doc §3; processor_state.cc handleDataGolangStatus, golang_filter.cc doData).
		t.Run("StopAndBuffer_"+mode, func(t *testing.T) {
			id := e.id("sab")
			ctl := hdrs("x-test-mode", mode, "x-test-dd-mode", "buffer")
			res, body := sendChunked(t, h, id, "/echo", ctl, chunks, []int{1, 1, 1})
			rep := decodeEcho(t, &resp{status: res.StatusCode, body: body})
			if rep.Body != "abcDEFGHI" {
				t.Errorf("upstream body %q, want abcDEFGHI (first chunk untouched, Go upper-cased the rest)", rep.Body)
			}
			de := dataEvents(h.events(t, id), "decode-data")
			if len(de) != 2 || de[0].data != "abc" || de[0].end || de[1].data != "defghi" || !de[1].end {
				t.Errorf("Go saw %+v, want [abc end=false] then [defghi end=true]", de)
			}
		})
		// StopAndBufferWatermark: every chunk goes to Go on its own; the held chunks (with Go's
		// changes) are all forwarded at the end.
		t.Run("StopAndBufferWatermark_"+mode, func(t *testing.T) {
			id := e.id("sabw")
			ctl := hdrs("x-test-mode", mode, "x-test-dd-mode", "watermark")
			res, body := sendChunked(t, h, id, "/echo", ctl, chunks, []int{1, 2, 3})
			rep := decodeEcho(t, &resp{status: res.StatusCode, body: body})
			if rep.Body != "ABCDEFGHI" {
				t.Errorf("upstream body %q, want ABCDEFGHI", rep.Body)
			}
			de := dataEvents(h.events(t, id), "decode-data")
			if len(de) < 3 || de[0].data != "abc" || de[1].data != "def" || de[2].data != "ghi" {
				t.Errorf("Go saw %+v, want abc, def, ghi each on its own", de)
			} else if !de[len(de)-1].end {
				t.Errorf("last data call not end_stream: %+v", de)
			}
		})
		// StopNoBuffer: the chunk Go just saw is dropped.
		t.Run("StopNoBuffer_"+mode, func(t *testing.T) {
			id := e.id("snb")
			ctl := hdrs("x-test-mode", mode, "x-test-dd-mode", "nobuffer")
			res, body := sendChunked(t, h, id, "/echo", ctl, chunks, []int{1, 2, 3})
			rep := decodeEcho(t, &resp{status: res.StatusCode, body: body})
			de := dataEvents(h.events(t, id), "decode-data")
			want := ""
			for _, d := range de {
				if d.end {
					want += strings.ToUpper(d.data)
				}
			}
			if rep.Body != want || strings.Contains(strings.ToLower(rep.Body), "abc") || strings.Contains(strings.ToLower(rep.Body), "def") {
				t.Errorf("upstream body %q, want only the end_stream chunk %q (abc, def dropped); Go saw %+v", rep.Body, want, de)
			}
		})
		// Continue per chunk.
		t.Run("Continue_"+mode, func(t *testing.T) {
			id := e.id("cont")
			ctl := hdrs("x-test-mode", mode, "x-test-dd-mode", "upper")
			res, body := sendChunked(t, h, id, "/echo", ctl, chunks, []int{1, 2, 3})
			rep := decodeEcho(t, &resp{status: res.StatusCode, body: body})
			if rep.Body != "ABCDEFGHI" {
				t.Errorf("upstream body %q, want ABCDEFGHI", rep.Body)
			}
			de := dataEvents(h.events(t, id), "decode-data")
			ends := 0
			for _, d := range de {
				if d.end {
					ends++
				}
			}
			if ends != 1 || !de[len(de)-1].end {
				t.Errorf("end_stream must be delivered exactly once, last: %+v", de)
			}
		})
		// StopAndBuffer in the header phase: Go sees the whole body once.
		t.Run("DecodeHeaderStopAndBuffer_"+mode, func(t *testing.T) {
			id := e.id("dhsab")
			ctl := hdrs("x-test-mode", mode, "x-test-dh-ret", "StopAndBuffer", "x-test-dd-mode", "upper")
			res, body := sendChunked(t, h, id, "/echo", ctl, chunks, []int{0, 0, 0})
			rep := decodeEcho(t, &resp{status: res.StatusCode, body: body})
			if rep.Body != "ABCDEFGHI" {
				t.Errorf("upstream body %q, want ABCDEFGHI", rep.Body)
			}
			de := dataEvents(h.events(t, id), "decode-data")
			if len(de) != 1 || de[0].data != "abcdefghi" || !de[0].end {
				t.Errorf("Go saw %+v, want one call [abcdefghi end=true]", de)
			}
		})
		// StopAndBufferWatermark in the header phase: headers held, chunks seen one by one.
		t.Run("DecodeHeaderStopAndBufferWatermark_"+mode, func(t *testing.T) {
			id := e.id("dhsabw")
			ctl := hdrs("x-test-mode", mode, "x-test-dh-ret", "StopAndBufferWatermark", "x-test-dd-mode", "upper")
			res, body := sendChunked(t, h, id, "/echo", ctl, chunks, []int{1, 2, 3})
			rep := decodeEcho(t, &resp{status: res.StatusCode, body: body})
			if rep.Body != "ABCDEFGHI" {
				t.Errorf("upstream body %q, want ABCDEFGHI", rep.Body)
			}
		})
		// Encode direction, with a chunked upstream response.
		for _, c := range []struct{ name, mode, want string }{
			{"Encode_StopAndBuffer", "buffer", "aaaBBBCCC"},
			{"Encode_StopAndBufferWatermark", "watermark", "AAABBBCCC"},
			{"Encode_Continue", "upper", "AAABBBCCC"},
		} {
			t.Run(c.name+"_"+mode, func(t *testing.T) {
				id := e.id("enc")
				r := h.must(t, req{listener: "main", path: "/chunked?n=3&size=3&delay=60", headers: hdrs("x-test-id", id, "x-test-mode", mode, "x-test-ed-mode", c.mode)})
				if r.status != 200 || r.body != c.want {
					t.Errorf("got %d %q, want 200 %q; Go saw %+v", r.status, r.body, c.want, dataEvents(h.events(t, id), "encode-data"))
				}
			})
		}
		t.Run("EncodeHeaderStopAndBuffer_"+mode, func(t *testing.T) {
			id := e.id("ehsab")
			r := h.must(t, req{listener: "main", path: "/chunked?n=3&size=3&delay=30", headers: hdrs("x-test-id", id, "x-test-mode", mode, "x-test-eh-ret", "StopAndBuffer", "x-test-ed-mode", "upper")})
			if r.status != 200 || r.body != "AAABBBCCC" {
				t.Errorf("got %d %q, want 200 AAABBBCCC", r.status, r.body)
			}
			if de := dataEvents(h.events(t, id), "encode-data"); len(de) != 1 || !de[0].end || de[0].data != "aaabbbccc" {
				t.Errorf("Go saw %+v, want one call [aaabbbccc end=true]", de)
			}
		})
	}
}

// ---------------------------------------------------------------- buffer API

func testBufferAPI(t *testing.T, e *env) {
	body := strings.Repeat("12345", 10)
	cases := []struct{ op, want string }{
		{"drain", strings.Repeat("12345", 9)},
		{"reset", ""},
		{"resetafterdrain", ""},
		{"len", "len=50"},
		{"prepend-append", "[<" + body + ">]"},
		{"set", "replaced"},
	}
	for _, mode := range modes() {
		for _, c := range cases {
			t.Run(c.op+"_"+mode, func(t *testing.T) {
				r := e.h.must(t, req{listener: "main", method: "POST", path: "/echo", body: body, trailers: nil,
					headers: hdrs("x-test-mode", mode, "x-test-dh-ret", "StopAndBuffer", "x-test-buffer-op", c.op, "transfer-encoding", "chunked")})
				if r.status != 200 {
					t.Fatalf("status %d body %q", r.status, r.body)
				}
				if rep := decodeEcho(t, r); rep.Body != c.want {
					t.Errorf("upstream body %q, want %q", rep.Body, c.want)
				}
			})
		}
	}
}

// ---------------------------------------------------------------- local reply

// phaseRequest builds a request that reaches PHASE of the conf filter with the control headers.
func phaseRequest(phase string, ctl map[string]string) req {
	r := req{listener: "main", method: "POST", path: "/echo", headers: ctl}
	switch phase {
	case "decode-header":
		r.method = "GET"
	case "decode-data":
		r.body = "hello"
	case "decode-trailer":
		r.body = "hello"
		r.trailers = map[string]string{"x-trailer": "foo"}
	case "encode-header":
		r.path = "/text?body=bye"
	case "encode-data":
		r.path = "/chunked?n=2&size=3"
		r.headers = merge(ctl, "x-test-eh-ret", "StopAndBuffer") // hold the headers so a reply is still possible
	case "encode-trailer":
		// No body (a held data chunk would force the headers out before the trailers, see
		// golang_filter.cc doTrailer), and the trailers arrive after Go handled the headers (if
		// they arrived while Go was still in EncodeHeaders, continueStatusInternal would call
		// doDataGo on a null data_buffer_: golang_filter.cc:436-441).
		r.path = trailersPath("", 150)
		r.headers = merge(ctl, "x-test-eh-ret", "StopAndBuffer")
	}
	return r
}

var allPhases = []string{"decode-header", "decode-data", "decode-trailer", "encode-header", "encode-data", "encode-trailer"}

func testLocalReply(t *testing.T, e *env) {
	h := e.h
	for _, phase := range allPhases {
		for _, mode := range modes() {
			t.Run(phase+"_"+mode, func(t *testing.T) {
				id := e.id("lr")
				r := h.must(t, phaseRequest(phase, hdrs("x-test-id", id, "x-test-mode", mode, "x-test-localreply", phase)))
				wantBody := "forbidden from go in " + phase + "\r\n"
				if r.status != 403 || r.body != wantBody {
					t.Fatalf("got %d %q, want 403 %q", r.status, r.body, wantBody)
				}
				if got := r.get("x-test-phase"); got != phase {
					t.Errorf("x-test-phase = %q, want %q", got, phase)
				}
				if got := r.get("content-type"); got != "text/html" {
					t.Errorf("content-type = %q, want text/html", got)
				}
				if got := strings.Join(r.header.Values("x-two-values"), ","); got != "foo,bar" {
					t.Errorf("x-two-values = %q, want foo,bar", got)
				}
				ev := h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "destroy") })
				// A local reply sent while decoding goes through the whole encoder chain, this Go
				// filter included (filter_manager.cc sendLocalReplyViaFilterChain). One sent while
				// encoding, with response headers not yet sent, goes straight to the codec
				// (sendDirectLocalReply) and is not seen by the encoder filters again.
				seen := hasEvent(ev, "encode-header status=403")
				if strings.HasPrefix(phase, "decode") && !seen {
					t.Errorf("local reply from %s did not pass through the filter's EncodeHeaders; events:\n%s", phase, strings.Join(ev, "\n"))
				}
				if strings.HasPrefix(phase, "encode") && seen {
					t.Errorf("local reply from %s went through the encoder filters again; events:\n%s", phase, strings.Join(ev, "\n"))
				}
				// the access log sees the local reply and its details
				if l := safeIdx(ev, eventIndex(ev, "log ")); !strings.Contains(l, " code=403 ") || !strings.Contains(l, " details=test_from_go ") {
					t.Errorf("OnLog after a local reply: %q, want code=403 and details=test_from_go", l)
				}
			})
		}
	}
	// A local reply to a gRPC request becomes a trailers-only gRPC response: 200,
	// application/grpc, the body percent-encoded in grpc-message, no body (utility.cc:746-775
	// prepareLocalReply). grpc-status is the Go value as is: cgo.cc:121 casts it to GrpcStatus
	// (int64) and the filter passes it on as an engaged optional, so the SDK's customary -1 comes
	// out as "-1" rather than the 403 -> 7 mapping (utility.cc:750-755).
	for _, mode := range modes() {
		for _, gc := range []struct{ send, want string }{{"", "-1"}, {"16", "16"}} {
			t.Run("GrpcRequest_status"+gc.want+"_"+mode, func(t *testing.T) {
				ctl := hdrs("content-type", "application/grpc", "x-test-mode", mode, "x-test-localreply", "decode-header")
				if gc.send != "" {
					ctl["x-test-grpc-status"] = gc.send
				}
				r := h.must(t, req{listener: "main", method: "POST", path: "/svc/Method", body: "\x00\x00\x00\x00\x00", headers: ctl})
				gs, gm := r.get("grpc-status"), r.get("grpc-message")
				if gs == "" {
					gs, gm = r.trailer.Get("grpc-status"), r.trailer.Get("grpc-message")
				}
				if r.status != 200 || r.get("content-type") != "application/grpc" || gs != gc.want || gm != "forbidden from go in decode-header%0D%0A" || r.body != "" {
					t.Errorf("got %d content-type %q grpc-status %q grpc-message %q body %q; want 200 application/grpc %s %q and no body",
						r.status, r.get("content-type"), gs, gm, r.body, gc.want, "forbidden from go in decode-header%0D%0A")
				}
			})
		}
	}
	// A local reply from the first golang filter's DecodeHeaders: the second golang filter never
	// decodes, but its encoder runs (filter_manager.cc sendLocalReplyViaFilterChain encodes from
	// the first encoder filter), and it still gets OnLog and OnDestroy. Its OnLog gets no request
	// headers: initRequest() already ran in encodeHeaders, so Filter::log leaves request_headers_
	// null (golang_filter.cc log, initRequest) and CopyHeaders answers CAPIInvalidPhase.
	for _, mode := range modes() {
		t.Run("LocalReplySkipsLaterDecoders_"+mode, func(t *testing.T) {
			id := e.id("lrskip")
			r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-id", id, "x-test-mode", mode, "x-test-localreply", "decode-header")})
			if r.status != 403 {
				t.Fatalf("status %d", r.status)
			}
			ev := h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "reader destroy") && hasEvent(ev, "destroy") })
			if hasEvent(ev, "reader decode-header") {
				t.Errorf("second filter decoded a request the first one answered; events:\n%s", strings.Join(ev, "\n"))
			}
			for _, want := range []string{"reader encode-header status=403", "reader log req-headers-unavailable: invalid phase", "reader destroy reason=0"} {
				if !hasEvent(ev, want) {
					t.Errorf("second filter: missing %q; events:\n%s", want, strings.Join(ev, "\n"))
				}
			}
			// encoder order is the reverse of the decoder order: reader, then conf
			if ri, ci := eventIndex(ev, "reader encode-header"), eventIndex(ev, "encode-header status=403"); ri < 0 || ci < 0 || ri > ci {
				t.Errorf("want reader's EncodeHeaders before conf's; events:\n%s", strings.Join(ev, "\n"))
			}
		})
	}
	// After the response headers were sent, a local reply cannot be sent: Envoy resets the stream
	// (filter_manager.cc sendLocalReply: non_100_response_headers_encoded_ -> resetStream).
	t.Run("encode-data_after_headers_sent", func(t *testing.T) {
		r := h.do(t, req{listener: "main", path: "/chunked?n=3&size=3&delay=30", headers: hdrs("x-test-localreply", "encode-data")})
		if r.err == nil && r.status == 403 {
			t.Fatalf("got a 403 local reply after the response headers were sent; want a reset")
		}
		if r.err == nil && r.body == "aaabbbccc" {
			t.Fatalf("got the full body %q; want the stream reset", r.body)
		}
		h.alive(t)
	})
}

// ---------------------------------------------------------------- panics

func testPanicRecover(t *testing.T, e *env) {
	h := e.h
	for _, phase := range allPhases {
		for _, mode := range modes() {
			t.Run(phase+"_"+mode, func(t *testing.T) {
				before := e.panicCount(t, "main")
				r := h.must(t, phaseRequest(phase, hdrs("x-test-mode", mode, "x-test-panic", phase)))
				if r.status != 500 || r.body != "error happened in filter\r\n" {
					t.Fatalf("got %d %q, want 500 %q", r.status, r.body, "error happened in filter\r\n")
				}
				if after := e.panicCount(t, "main"); after != before+1 {
					t.Errorf("http.main.golang.panic_error %d -> %d, want +1", before, after)
				}
				if ok := h.must(t, req{listener: "main", path: "/status/200"}); ok.status != 200 {
					t.Errorf("host does not serve after a panic: %d", ok.status)
				}
			})
		}
	}
	t.Run("BadAPI", func(t *testing.T) {
		before := e.panicCount(t, "main")
		r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: "hello", headers: hdrs("x-test-badapi", "decode-data")})
		if r.status != 500 || r.body != "error happened in filter\r\n" {
			t.Fatalf("got %d %q, want 500", r.status, r.body)
		}
		if after := e.panicCount(t, "main"); after != before+1 {
			t.Errorf("panic_error %d -> %d, want +1", before, after)
		}
	})
}

// DecodeHeadersWithoutData_* / EncodeHeadersWithoutData_*: waiting for data that never comes is a
// Go-side panic (shim.go), answered with 500.
func testActionWithoutData(t *testing.T, e *env) {
	h := e.h
	for _, st := range []string{"StopAndBuffer", "StopAndBufferWatermark"} {
		t.Run("DecodeHeadersWithoutData_"+st, func(t *testing.T) {
			before := e.panicCount(t, "main")
			r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-dh-ret", st)})
			if r.status != 500 {
				t.Fatalf("status %d body %q, want 500", r.status, r.body)
			}
			if after := e.panicCount(t, "main"); after != before+1 {
				t.Errorf("panic_error %d -> %d, want +1", before, after)
			}
		})
		t.Run("EncodeHeadersWithoutData_"+st, func(t *testing.T) {
			before := e.panicCount(t, "main")
			r := h.must(t, req{listener: "main", path: "/status/204", headers: hdrs("x-test-eh-ret", st)})
			if r.status != 500 {
				t.Fatalf("status %d body %q, want 500", r.status, r.body)
			}
			if after := e.panicCount(t, "main"); after != before+1 {
				t.Errorf("panic_error %d -> %d, want +1", before, after)
			}
		})
		// with a body it is a normal buffered request
		t.Run("DecodeHeadersWithData_"+st, func(t *testing.T) {
			r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: "hello", headers: hdrs("x-test-dh-ret", st, "x-test-dd-mode", "upper")})
			if r.status != 200 || decodeEcho(t, r).Body != "HELLO" {
				t.Fatalf("got %d %q, want 200 with body HELLO", r.status, r.body)
			}
		})
	}
}

// ---------------------------------------------------------------- AddData

func testAddData(t *testing.T, e *env) {
	h := e.h
	for _, mode := range modes() {
		t.Run("AddDataInDecodeHeaders_EndStream_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-mode", mode, "x-test-adddata-dh", "foo")})
			rep := decodeEcho(t, r)
			if rep.Method != "POST" || rep.Body != "foo" {
				t.Errorf("upstream saw %s %q, want POST foo", rep.Method, rep.Body)
			}
		})
		if mode == "async" {
			// AddData from a goroutine while the headers are stopped and the body has not ended
			// (envoy/http/filter.h addDecodedData case 3): the added data goes first. Adding data
			// synchronously in decodeHeaders with end_stream=false is an error per filter.h, so
			// it is not tested.
			t.Run("AddDataInDecodeHeaders_WithoutEndStream_"+mode, func(t *testing.T) {
				id := e.id("adddh")
				rc := h.dial(t, "main")
				rc.write("POST /echo HTTP/1.1\r\nhost: test.com\r\ntransfer-encoding: chunked\r\nx-test-mode: async\r\nx-test-adddata-dh: foo\r\nx-test-id: " + id + "\r\n\r\n")
				h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "decode-header") })
				time.Sleep(200 * time.Millisecond) // Go has added the data and continued
				rc.chunk("bar")
				rc.write("0\r\n\r\n")
				res, body, err := rc.readResponse("POST")
				if err != nil {
					t.Fatalf("response: %v", err)
				}
				if rep := decodeEcho(t, &resp{status: res.StatusCode, body: body}); rep.Body != "foobar" {
					t.Errorf("upstream body %q, want foobar", rep.Body)
				}
			})
		}
		t.Run("AddDataRejectedWhenProcessingData_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: "addData", headers: hdrs("x-test-mode", mode, "x-test-adddata-dd", "x", "transfer-encoding", "chunked")})
			want := "addData called in DecodeData is not allowed: invalid phase, maybe headers/buffer already continued"
			if rep := decodeEcho(t, r); rep.Body != want {
				t.Errorf("upstream body %q, want %q", rep.Body, want)
			}
		})
		t.Run("AddDataInDecodeTrailers_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: "foo", trailers: map[string]string{"x-trailer": "bar"}, headers: hdrs("x-test-mode", mode, "x-test-adddata-dt", "bar")})
			if rep := decodeEcho(t, r); rep.Body != "foobar" {
				t.Errorf("upstream body %q, want foobar", rep.Body)
			}
		})
		t.Run("AddDataBufferAllData_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: "foo", trailers: map[string]string{"x-trailer": "bar"}, headers: hdrs("x-test-mode", mode, "x-test-adddata-dt", "bar", "x-test-dh-ret", "StopAndBuffer")})
			if rep := decodeEcho(t, r); rep.Body != "foobar" {
				t.Errorf("upstream body %q, want foobar", rep.Body)
			}
		})
		t.Run("AddDataInEncodeHeaders_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", path: "/status/200?body=", headers: hdrs("x-test-mode", mode, "x-test-adddata-eh", "foo")})
			if r.status != 200 || r.body != "foo" {
				t.Errorf("got %d %q, want 200 foo", r.status, r.body)
			}
		})
		t.Run("AddDataInEncodeTrailers_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", path: trailersPath("foo", 0), headers: hdrs("x-test-mode", mode, "x-test-adddata-et", "bar")})
			if r.status != 200 || r.body != "foobar" {
				t.Errorf("got %d %q, want 200 foobar", r.status, r.body)
			}
		})
		t.Run("AddDataBufferAllDataAndAsync_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", path: trailersPath("foo", 0), headers: hdrs("x-test-mode", mode, "x-test-adddata-et", "bar", "x-test-eh-ret", "StopAndBuffer")})
			if r.status != 200 || r.body != "foobar" {
				t.Errorf("got %d %q, want 200 foobar", r.status, r.body)
			}
		})
	}
}

// ---------------------------------------------------------------- InjectData

func testInjectData(t *testing.T, e *env) {
	h := e.h
	t.Run("InNonBufferedDownstreamRequest", func(t *testing.T) {
		id := e.id("inj")
		res, body := sendChunked(t, h, id, "/echo", hdrs("x-test-dd-mode", "inject"), []string{"To be, ", "that is "}, []int{1, 2})
		rep := decodeEcho(t, &resp{status: res.StatusCode, body: body})
		if rep.Body != "[To be, ][that is ]" {
			t.Errorf("upstream body %q, want %q", rep.Body, "[To be, ][that is ]")
		}
	})
	t.Run("InBufferedDownstreamRequest", func(t *testing.T) {
		r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: "To be, ", headers: hdrs("x-test-dd-mode", "inject-stream", "x-test-dh-ret", "StopAndBuffer", "transfer-encoding", "chunked")})
		want := ""
		for i := 0; i < 5; i++ {
			want += fmt.Sprintf("part%d:To be, ;", i)
		}
		want += "end"
		if rep := decodeEcho(t, r); rep.Body != want {
			t.Errorf("upstream body %q, want %q", rep.Body, want)
		}
	})
	t.Run("InNonBufferedUpstreamResponse", func(t *testing.T) {
		r := h.must(t, req{listener: "main", path: "/chunked?n=2&size=4&delay=50", headers: hdrs("x-test-ed-mode", "inject")})
		if r.status != 200 || r.body != "[aaaa][bbbb]" {
			t.Errorf("got %d %q, want 200 [aaaa][bbbb]", r.status, r.body)
		}
	})
	t.Run("InBufferedUpstreamResponse", func(t *testing.T) {
		r := h.must(t, req{listener: "main", path: "/chunked?n=2&size=2&delay=20", headers: hdrs("x-test-ed-mode", "inject-stream", "x-test-eh-ret", "StopAndBuffer")})
		want := ""
		for i := 0; i < 5; i++ {
			want += fmt.Sprintf("part%d:aabb;", i)
		}
		want += "end"
		if r.status != 200 || r.body != want {
			t.Errorf("got %d %q, want 200 %q", r.status, r.body, want)
		}
	})
	t.Run("WithoutProcessingData", func(t *testing.T) {
		r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-inject-in-header", "1")})
		if r.status != 400 || !strings.Contains(r.body, "invalid phase") {
			t.Errorf("got %d %q, want 400 mentioning 'invalid phase' (CAPIInvalidPhase)", r.status, r.body)
		}
	})
	t.Run("ProcessingDataSynchronously", func(t *testing.T) {
		r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: "blahblah", headers: hdrs("x-test-dd-mode", "inject-sync")})
		if r.status != 400 || !strings.Contains(r.body, "invalid scene") {
			t.Errorf("got %d %q, want 400 mentioning 'invalid scene' (CAPIInvalidScene)", r.status, r.body)
		}
	})
}

// ---------------------------------------------------------------- buffer limits

func testBufferExceedLimit(t *testing.T, e *env) {
	h := e.h
	for _, mode := range modes() {
		t.Run("DecodeHeader_413_"+mode, func(t *testing.T) {
			rc := h.dial(t, "smallbuf")
			rc.write("POST /echo HTTP/1.1\r\nhost: test.com\r\ntransfer-encoding: chunked\r\nx-test-dh-ret: StopAndBuffer\r\nx-test-mode: " + mode + "\r\n\r\n")
			rc.chunk(strings.Repeat("-", 100))
			time.Sleep(30 * time.Millisecond)
			rc.chunk(strings.Repeat("-", 200))
			rc.write("0\r\n\r\n")
			res, body, err := rc.readResponse("POST")
			if err != nil {
				t.Fatalf("response: %v", err)
			}
			if res.StatusCode != 413 || body != "Payload Too Large" {
				t.Errorf("got %d %q, want 413 %q", res.StatusCode, body, "Payload Too Large")
			}
		})
		t.Run("EncodeHeader_500_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "smallbuf", path: "/chunked?n=4&size=100&delay=10", headers: hdrs("x-test-eh-ret", "StopAndBuffer", "x-test-mode", mode)})
			if r.status != 500 || r.body != "Internal Server Error" {
				t.Errorf("got %d %q, want 500 %q", r.status, r.body, "Internal Server Error")
			}
		})
	}
	t.Run("UnderLimit", func(t *testing.T) {
		r := h.must(t, req{listener: "smallbuf", method: "POST", path: "/echo", body: strings.Repeat("x", 100), headers: hdrs("x-test-dh-ret", "StopAndBuffer")})
		if r.status != 200 || decodeEcho(t, r).Body != strings.Repeat("x", 100) {
			t.Errorf("got %d, want 200 with the body", r.status)
		}
	})
}

// ---------------------------------------------------------------- per-route config

func testRouteConfig(t *testing.T, e *env) {
	h := e.h
	cases := []struct {
		name, listener, host, path string
		header0Kept, header1Kept   bool
		setHeader, chain           string
	}{
		{"RouteConfig_Filter", "routeconfig", "filter-level.com", "/test", false, true, "foo", "filter"},
		{"RouteConfig_VirtualHost", "routeconfig", "test.com", "/test", true, false, "bar", "filter>vhost"},
		{"RouteConfig_Route", "routeconfig", "test.com", "/route-config-test", false, true, "baz", "filter>vhost>route"},
		{"RouteConfig_RouteTable", "rctable", "x.com", "/plain", true, true, "table-header", "filter>table"},
		{"RouteConfig_RouteTableAndRoute", "rctable", "x.com", "/route", true, true, "table-header", "filter>table>route"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var first string
			for i := 0; i < 4; i++ { // repeat: the merged config is cached (golang_filter.cc getMergedConfigId)
				r := h.must(t, req{listener: c.listener, host: c.host, path: c.path,
					headers: hdrs("x-echo-resp-x-test-header-0", "foo", "x-echo-resp-x-test-header-1", "bar")})
				if r.status != 200 {
					t.Fatalf("status %d", r.status)
				}
				if got := r.get("x-test-header-0") != ""; got != c.header0Kept {
					t.Errorf("x-test-header-0 present=%v, want %v", got, c.header0Kept)
				}
				if got := r.get("x-test-header-1") != ""; got != c.header1Kept {
					t.Errorf("x-test-header-1 present=%v, want %v", got, c.header1Kept)
				}
				if got := r.get(c.setHeader); got != "test-value" {
					t.Errorf("%s = %q, want test-value", c.setHeader, got)
				}
				if got := r.get("x-config-chain"); got != c.chain {
					t.Errorf("merged config chain %q, want %q (Merge from the least to the most specific)", got, c.chain)
				}
				if i == 1 {
					first = r.get("x-merge-count")
				}
				if i == 3 && r.get("x-merge-count") != first {
					t.Errorf("Merge called again for a cached route: merge count %s -> %s", first, r.get("x-merge-count"))
				}
			}
		})
	}
}

// ---------------------------------------------------------------- route cache

func testRouteCache(t *testing.T, e *env) {
	h := e.h
	for _, mode := range modes() {
		cases := []struct {
			name, route, want string
		}{
			{"RouteCache_noClear", "", "a"},
			{"RouteCache_Clear", "clear", "b"},
			{"RefreshRouteCache", "refresh", "b"},
		}
		for _, c := range cases {
			t.Run(c.name+"_"+mode, func(t *testing.T) {
				ctl := hdrs("x-test-mode", mode, "x-test-set-header", "x-route-to=b")
				if c.route != "" {
					ctl["x-test-route"] = c.route
				}
				r := h.must(t, req{listener: "main", path: "/echo", headers: ctl})
				if r.status != 200 {
					t.Fatalf("status %d %q", r.status, r.body)
				}
				up := r.get("x-upstream")
				if !strings.HasPrefix(up, c.want) {
					t.Errorf("served by %q, want cluster %s", up, c.want)
				}
			})
		}
		// The merged config id is fixed at the first header event and not recomputed after the
		// route changes (golang_filter.cc initRequest, GF:1694-1701).
		t.Run("ConfigIdFixedAfterClearRouteCache_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-mode", mode, "x-test-conf-name", "1", "x-route-to", "b")})
			if r.get("x-upstream") != "b" || r.get("x-conf-name") != "main>route_b" {
				t.Errorf("direct to route_b: upstream %q config %q, want b and main>route_b (per-route config merged)", r.get("x-upstream"), r.get("x-conf-name"))
			}
			r = h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-mode", mode, "x-test-conf-name", "1", "x-test-set-header", "x-route-to=b", "x-test-route", "clear")})
			if r.get("x-upstream") != "b" || r.get("x-conf-name") != "main" {
				t.Errorf("re-routed to route_b: upstream %q config %q, want b and main (config id not recomputed)", r.get("x-upstream"), r.get("x-conf-name"))
			}
		})
		// clearRouteCache leaves the stream info alone (conn_manager_impl.cc:2468-2477); only the
		// next route() -- RefreshRouteCache, a later filter, the router -- runs setVirtualHostRoute
		// (:2370-2395). So within the phase that cleared it, Go still reads the old route and
		// cluster; after a refresh, the new ones.
		t.Run("RouteCache_StreamInfoAfterClear_"+mode, func(t *testing.T) {
			// From a goroutine, RefreshRouteCache is posted to the worker (golang_filter.cc:1049-1067)
			// and GetRouteName reads under the filter mutex at once (:1080-1160): it sees the old
			// or the new route, depending on whether the worker ran the post first. GetProperty,
			// posted after the refresh, always sees the new one.
			refreshedName := "route_b"
			if mode == "async" {
				refreshedName = "default_route|route_b"
			}
			props := "route,xds.route_name,xds.cluster_name"
			for _, c := range []struct{ route, wantName, wantRoute, wantCluster, wantUpstream string }{
				{"clear", "default_route", "default_route", "backend_a", "b"},
				{"refresh", refreshedName, "route_b", "backend_b", "b"},
			} {
				r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-mode", mode,
					"x-test-set-header", "x-route-to=b", "x-test-route", c.route, "x-test-route-props", props)})
				if r.status != 200 || !strings.HasPrefix(r.get("x-upstream"), c.wantUpstream) {
					t.Fatalf("%s: status %d upstream %q, want 200 from %s", c.route, r.status, r.get("x-upstream"), c.wantUpstream)
				}
				name := r.get("x-dprop-route")
				if strings.Contains(c.wantName, "|") && strings.Contains("|"+c.wantName+"|", "|"+name+"|") {
					name = c.wantName
				}
				if got := [3]string{name, r.get("x-dprop-xds.route_name"), r.get("x-dprop-xds.cluster_name")}; got != [3]string{c.wantName, c.wantRoute, c.wantCluster} {
					t.Errorf("%s: Go read route/xds.route_name/xds.cluster_name %q, want %s %s %s", c.route, got, c.wantName, c.wantRoute, c.wantCluster)
				}
			}
		})
		// A re-match that finds no route: the stream info's route is null (xds.route_name not
		// found, GetRouteName ""), and no cluster.
		t.Run("RouteCache_RefreshToNoRoute_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", host: "strict.com", path: "/strict/x", headers: hdrs("x-test-mode", mode,
				"x-test-set-header", ":path=/elsewhere", "x-test-route", "refresh", "x-test-route-props", "route,xds.route_name,xds.cluster_name")})
			if r.status != 404 {
				t.Fatalf("got %d, want 404", r.status)
			}
			// GetRouteName from a goroutine may read before the posted refresh ran.
			name := r.get("x-dprop-route")
			ok := name == "" || (mode == "async" && name == "strict_route")
			wantName := `"" (async: or "strict_route")`
			if !ok || !strings.HasPrefix(r.get("x-dprop-xds.route_name"), "ERR:") || !strings.HasPrefix(r.get("x-dprop-xds.cluster_name"), "ERR:") {
				t.Errorf("after refreshing to no route: route %q xds.route_name %q xds.cluster_name %q, want %s and not found",
					name, r.get("x-dprop-xds.route_name"), r.get("x-dprop-xds.cluster_name"), wantName)
			}
		})
		t.Run("RouteCache_ClearToNoRoute_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", host: "strict.com", path: "/strict/x", headers: hdrs("x-test-mode", mode, "x-test-set-header", ":path=/elsewhere", "x-test-route", "clear")})
			if r.status != 404 {
				t.Errorf("got %d, want 404 (no route after clearing the cache)", r.status)
			}
			r = h.must(t, req{listener: "main", host: "strict.com", path: "/strict/x", headers: hdrs("x-test-mode", mode, "x-test-set-header", ":path=/elsewhere")})
			if r.status != 200 || decodeEcho(t, r).URI != "/elsewhere" {
				t.Errorf("without clearing: got %d %q, want 200 via the cached route with path /elsewhere", r.status, r.body)
			}
		})
	}
}

// ---------------------------------------------------------------- cluster_header

// cluster_header routes (header_cluster_specifier.cc: the first value of the header) and a
// cluster that does not exist (router.cc:566-575: flag NC, details cluster_not_found, the route's
// cluster_not_found_response_code, empty body), also after a filter re-routed the request there.
func testClusterHeader(t *testing.T, e *env) {
	h := e.h
	props := "response.code,response.code_details,response.flags"
	const nc = "16777216" // 1 << CoreResponseFlag::NoClusterFound (24)
	for _, c := range []struct {
		name    string
		headers map[string]string
		status  int
		up      string
	}{
		{"existing", hdrs("x-cluster", "backend_b"), 200, "b"},
		{"first value wins", hdrs("x-cluster", "backend_b, backend_a"), 503, ""}, // one value "backend_b, backend_a": no such cluster
		{"missing_503", hdrs("x-cluster", "nope"), 503, ""},
		{"missing_404", hdrs("x-cluster-404", "nope"), 404, ""},
		{"empty value", hdrs("x-cluster", ""), 503, ""},
		{"set by a filter then cleared", hdrs("x-test-set-header", "x-cluster=nope", "x-test-route", "clear"), 503, ""},
		{"set by a filter, no clear: cached route", hdrs("x-test-set-header", "x-cluster=nope"), 200, "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hd := c.headers
			hd["x-test-properties"] = props
			before := h.stats(t)
			r := h.must(t, req{listener: "main", path: "/echo", headers: hd})
			after := h.stats(t)
			// cluster.<name>.upstream_rq_total: only a request that reached an upstream counts.
			for _, cl := range []string{"backend_a", "backend_b"} {
				k := "cluster." + cl + ".upstream_rq_total"
				want := int64(0)
				if c.up != "" && strings.HasSuffix(cl, "_"+c.up) {
					want = 1
				}
				if d := after[k] - before[k]; d != want {
					t.Errorf("%s +%d, want +%d", k, d, want)
				}
			}
			if r.status != c.status || (c.up == "") != (r.get("x-upstream") == "") || !strings.HasPrefix(r.get("x-upstream"), c.up) {
				t.Fatalf("status %d upstream %q body %q, want %d from %q", r.status, r.get("x-upstream"), r.body, c.status, c.up)
			}
			if c.status == 200 {
				if r.get("x-prop-response.flags") != "0" {
					t.Errorf("response.flags %q, want 0", r.get("x-prop-response.flags"))
				}
				return
			}
			if r.body != "" || r.get("x-prop-response.code_details") != "cluster_not_found" || r.get("x-prop-response.flags") != nc {
				t.Errorf("body %q details %q flags %q, want empty, cluster_not_found, %s", r.body,
					r.get("x-prop-response.code_details"), r.get("x-prop-response.flags"), nc)
			}
		})
	}
	// Go's SetHeader on a repeated header: setCopy removes every value and adds one
	// (header_map_impl.cc:326-329), so the upstream sees one x-cluster, and the route table the
	// new value after the clear.
	t.Run("set replaces every value", func(t *testing.T) {
		for _, mode := range modes() {
			rc := h.dial(t, "main")
			rc.write("GET /echo HTTP/1.1\r\nHost: test.com\r\nx-cluster: nope\r\nx-cluster: backend_a\r\n" +
				"x-test-mode: " + mode + "\r\nx-test-set-header: x-cluster=backend_b\r\nx-test-route: clear\r\nConnection: close\r\n\r\n")
			res, body, err := rc.readResponse("GET")
			if err != nil || res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("x-upstream"), "b") {
				t.Fatalf("%s: got %v %v, want 200 from b", mode, res, err)
			}
			var e struct{ Headers map[string][]string }
			if err := json.Unmarshal([]byte(body), &e); err != nil || len(e.Headers["x-cluster"]) != 1 || e.Headers["x-cluster"][0] != "backend_b" {
				t.Errorf("%s: upstream saw x-cluster %q (%v), want one value backend_b", mode, e.Headers["x-cluster"], err)
			}
		}
	})
	// Repeated headers: Envoy reads the first value.
	t.Run("repeated header: first value", func(t *testing.T) {
		rc := h.dial(t, "main")
		rc.write("GET /echo HTTP/1.1\r\nHost: test.com\r\nx-cluster: backend_b\r\nx-cluster: nope\r\nConnection: close\r\n\r\n")
		res, _, err := rc.readResponse("GET")
		if err != nil || res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("x-upstream"), "b") {
			t.Fatalf("got %v %v, want 200 from b", res, err)
		}
	})
}

// ---------------------------------------------------------------- properties

func testProperty(t *testing.T, e *env) {
	h := e.h
	props := []string{"request.path", "request.url_path", "request.host", "request.scheme", "request.method",
		"request.referer", "request.useragent", "request.id", "request.query", "request.protocol",
		"request.headers.x-custom", "request.time", "request.size", "request.total_size",
		"response.code", "response.code_details", "response.headers.x-upstream",
		"source.address", "source.port", "destination.address", "destination.port",
		"xds.route_name", "xds.cluster_name", "xds.virtual_host_name", "request.nonexistent", "request.headers",
		"upstream.address"}
	// Paths Envoy's walk (golang_filter.cc getStringPropertyInternal) treats specially: it cuts at
	// every '.', a trailing '.' adds no part, an empty part is an unknown name, and the empty
	// path never leaves the initial null CelValue, which serializeStringValue refuses.
	parsing := map[string]string{
		"":                              "ERR:serialization failure",
		".":                             "ERR:value not found",
		".request":                      "ERR:value not found",
		"request.":                      "ERR:serialization failure", // the request map
		"request..path":                 "ERR:value not found",
		"request.path.":                 "/property?a=1",
		"request.path.more":             "ERR:value not found", // a string has no fields
		"request.headers.x-custom.more": "ERR:value not found",
		"xds":                           "ERR:serialization failure",
		"nosuchroot":                    "ERR:value not found",
	}
	for k := range parsing {
		props = append(props, k)
	}
	for _, mode := range modes() {
		t.Run(mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", method: "POST", path: "/property?a=1", body: "helloworld",
				headers: hdrs("x-test-mode", mode, "x-test-properties", strings.Join(props, ","), "user-agent", "ua", "referer", "r", "x-request-id", "xri", "x-custom", "cv")})
			if r.status != 200 {
				t.Fatalf("status %d", r.status)
			}
			p := func(k string) string { return r.get("x-prop-" + k) }
			mainPort := strconv.Itoa(h.ports["main"])
			exact := map[string]string{
				"request.path":                "/property?a=1",
				"request.url_path":            "/property",
				"request.host":                "test.com",
				"request.scheme":              "http",
				"request.method":              "POST",
				"request.referer":             "r",
				"request.useragent":           "ua",
				"request.id":                  "xri",
				"request.query":               "a=1",
				"request.protocol":            "HTTP/1.1",
				"request.headers.x-custom":    "cv",
				"request.size":                "10",
				"response.code":               "200",
				"response.code_details":       "via_upstream",
				"destination.address":         "127.0.0.1:" + mainPort,
				"destination.port":            mainPort,
				"xds.route_name":              "default_route",
				"xds.cluster_name":            "backend_a",
				"xds.virtual_host_name":       "main_vhost",
				"request.nonexistent":         "ERR:value not found",
				"request.headers":             "ERR:serialization failure",
				"response.headers.x-upstream": r.get("x-upstream"),
			}
			for k, want := range exact {
				if got := p(k); got != want {
					t.Errorf("GetProperty(%q) = %q, want %q", k, got, want)
				}
			}
			for k, want := range parsing {
				if got := p(k); got != want {
					t.Errorf("GetProperty(%q) = %q, want %q (Envoy's path walk)", k, got, want)
				}
			}
			if got := p("upstream.address"); got != fmt.Sprintf("127.0.0.1:%d", e.a1.Port) && got != fmt.Sprintf("127.0.0.1:%d", e.a2.Port) {
				t.Errorf("upstream.address = %q, want a backend_a endpoint", got)
			}
			if got := p("source.address"); !strings.HasPrefix(got, "127.0.0.1:") {
				t.Errorf("source.address = %q", got)
			}
			if n, err := strconv.Atoi(p("source.port")); err != nil || n <= 0 {
				t.Errorf("source.port = %q", p("source.port"))
			}
			if _, err := time.Parse("2006-01-02T15:04:05.999999-07:00", p("request.time")); err != nil {
				t.Errorf("request.time = %q is not RFC3339 like 2023-07-31T07:21:40.695646+00:00: %v", p("request.time"), err)
			}
			if n, err := strconv.Atoi(p("request.total_size")); err != nil || n <= 10 {
				t.Errorf("request.total_size = %q, want > 10", p("request.total_size"))
			}
		})
	}
}

// ---------------------------------------------------------------- access log

func testAccessLog(t *testing.T, e *env) {
	h := e.h
	id := e.id("log")
	r := h.must(t, req{listener: "main", method: "POST", path: trailersPath("goodbye", 0), body: "helloworld",
		trailers: map[string]string{"x-trailer": "foo"}, headers: hdrs("x-test-id", id)})
	if r.status != 200 || r.body != "goodbye" || r.trailer.Get("x-trailer") != "bar" {
		t.Fatalf("got %d %q trailers %v", r.status, r.body, r.trailer)
	}
	ev := h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "destroy") })
	want := "log path=" + trailersPath("goodbye", 0) + " req-trailer=foo resp-status=200 resp-trailer=bar code=200 prop-code=200 details=via_upstream size=7"
	i := eventIndex(ev, "log ")
	if i < 0 || ev[i] != want {
		t.Errorf("OnLog saw %q, want %q; events:\n%s", safeIdx(ev, i), want, strings.Join(ev, "\n"))
	}
	if countEvents(ev, "log ") != 1 {
		t.Errorf("OnLog(DownstreamEnd) called %d times, want 1", countEvents(ev, "log "))
	}
	if hasEvent(ev, "log-start") {
		t.Errorf("OnLogDownstreamStart called without flush_access_log_on_new_request")
	}
}

func safeIdx(ev []string, i int) string {
	if i < 0 || i >= len(ev) {
		return "<none>"
	}
	return ev[i]
}

// ---------------------------------------------------------------- metrics

func testMetric(t *testing.T, e *env) {
	h := e.h
	n := 0
	for _, mode := range modes() {
		for i := 0; i < 5; i++ {
			n++
			r := h.must(t, req{listener: "metric", path: "/echo", headers: hdrs("x-test-mode", mode)})
			rep := decodeEcho(t, r)
			if got := rep.header("x-metric-counter"); got != strconv.Itoa(n) {
				t.Errorf("request %d (%s): counter read back %q, want %d", n, mode, got, n)
			}
			if got := rep.header("x-metric-gauge"); got != strconv.Itoa(2*n) {
				t.Errorf("request %d (%s): gauge read back %q, want %d", n, mode, got, 2*n)
			}
		}
	}
	st := h.stats(t)
	if st["conformance_requests_total"] != int64(n) || st["conformance_gauge"] != int64(2*n) {
		t.Errorf("/stats: conformance_requests_total=%d conformance_gauge=%d, want %d and %d (plugin-given names, unprefixed)",
			st["conformance_requests_total"], st["conformance_gauge"], n, 2*n)
	}
	// Record: counter adds, gauge sets
	r := h.must(t, req{listener: "metric", path: "/echo", headers: hdrs("x-test-metric-record", "5")})
	rep := decodeEcho(t, r)
	if rep.header("x-metric-counter") != strconv.Itoa(n+1+5) || rep.header("x-metric-gauge") != "5" {
		t.Errorf("after Record(5): counter %q gauge %q, want %d and 5", rep.header("x-metric-counter"), rep.header("x-metric-gauge"), n+6)
	}
	st = h.stats(t)
	if st["conformance_requests_total"] != int64(n+6) || st["conformance_gauge"] != 5 {
		t.Errorf("/stats after Record: %d %d, want %d 5", st["conformance_requests_total"], st["conformance_gauge"], n+6)
	}
	// Histogram (DefineMetric type 2 + RecordMetric through the C ABI; the v1.39 SDK has no Go API)
	for _, v := range []string{"3", "40", "500"} {
		r := h.must(t, req{listener: "metric", path: "/echo", headers: hdrs("x-test-metric-hist", v)})
		if got := decodeEcho(t, r).header("x-metric-hist-recorded"); got != "true" {
			t.Fatalf("RecordMetric(histogram) from Go: %q", got)
		}
	}
	prom := h.adminGet(t, "/stats/prometheus")
	for _, want := range []string{"# TYPE envoy_conformance_histogram histogram", "envoy_conformance_histogram_count{} 3", "envoy_conformance_histogram_sum{} 543"} {
		if !strings.Contains(prom, want) {
			t.Errorf("/stats/prometheus lacks %q", want)
		}
	}
	if text := h.adminGet(t, "/stats"); !strings.Contains(text, "conformance_histogram: ") || strings.Contains(text, "conformance_histogram: No recorded values") {
		t.Errorf("/stats does not show recorded values for conformance_histogram")
	}
}

// ---------------------------------------------------------------- dynamic metadata, filter state

func testDynamicMetadata(t *testing.T, e *env) {
	h := e.h
	cases := []struct {
		name string
		ctl  map[string]string
	}{
		{"DynamicMetadata", hdrs()},
		{"DynamicMetadata_Async", hdrs("x-test-mode", "async")},
		{"DynamicMetadata_Async_Sleep", hdrs("x-test-mode", "async", "x-test-sleep-ms", "20")},
		{"DynamicMetadata_ReaderAsync", hdrs("x-test-reader-mode", "async")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: "helloworld", headers: merge(c.ctl, "x-test-dymeta", "1", "x-test-reader", "1")})
			rep := decodeEcho(t, r)
			if got := rep.header("x-dymeta-self"); got != "value-from-conf/42" {
				t.Errorf("set then get in the same filter: %q, want value-from-conf/42", got)
			}
			if got := rep.header("x-reader-dymeta"); got != "value-from-conf" {
				t.Errorf("second golang filter read %q, want value-from-conf", got)
			}
			if got := r.get("x-dymeta-encode"); got != "value-from-conf/seen" {
				t.Errorf("encode phase read %q, want value-from-conf/seen (both filters' keys)", got)
			}
		})
	}
}

func testFilterState(t *testing.T, e *env) {
	h := e.h
	for _, c := range []map[string]string{hdrs(), hdrs("x-test-mode", "async"), hdrs("x-test-reader-mode", "async")} {
		t.Run("mode="+c["x-test-mode"]+c["x-test-reader-mode"], func(t *testing.T) {
			r := h.must(t, req{listener: "main", path: "/echo", headers: merge(c, "x-test-filterstate", "1", "x-test-reader", "1",
				"x-test-properties", "filter_state.conf_key,filter_state.conf.key,filter_state,filter_state.conf_key.x")})
			// GetProperty cuts the path at every '.' (golang_filter.cc getStringPropertyInternal), so
			// a key with a dot is out of its reach: filter_state.conf.key looks up "conf".
			for k, want := range map[string]string{
				"filter_state.conf_key":   "fs-value",
				"filter_state.conf.key":   "ERR:value not found",
				"filter_state":            "ERR:serialization failure",
				"filter_state.conf_key.x": "ERR:value not found",
			} {
				if got := r.get("x-prop-" + k); got != want {
					t.Errorf("GetProperty(%s) = %q, want %q", k, got, want)
				}
			}
			rep := decodeEcho(t, r)
			if got := rep.header("x-filterstate-self"); got != "fs-value" {
				t.Errorf("filter state get after set: %q, want fs-value", got)
			}
			if got := rep.header("x-filterstate-missing"); got != "[]" {
				t.Errorf("missing key: %q, want []", got)
			}
			if got := rep.header("x-reader-filterstate"); got != "fs-value" {
				t.Errorf("second filter: %q, want fs-value", got)
			}
			if got := r.get("x-filterstate-encode"); got != "fs-value" {
				t.Errorf("encode phase: %q, want fs-value", got)
			}
		})
	}
}

// ---------------------------------------------------------------- secrets

func testSecrets(t *testing.T, e *env) {
	h := e.h
	cases := []struct {
		name, key, want string
		code            int
	}{
		{"StaticSecret", "static_secret", "static_secret_value", 200},
		{"StaticSecretBytes", "bytes_secret", "bytes_secret_value", 200},
		{"MissingSecret", "missing_secret", "", 404},
	}
	for _, c := range cases {
		for _, mode := range modes() {
			name := c.name
			if mode == "async" {
				name += "GoRoutine"
			}
			t.Run(name, func(t *testing.T) {
				r := h.must(t, req{listener: "main", method: "POST", path: "/", headers: hdrs("x-test-mode", mode, "x-test-secret", c.key)})
				if r.status != c.code || r.body != c.want {
					t.Errorf("got %d %q, want %d %q", r.status, r.body, c.code, c.want)
				}
				if c.want == "" && r.get("content-type") != "" {
					t.Errorf("empty local reply has content-type %q, want none (utility.cc prepareLocalReply)", r.get("content-type"))
				}
			})
		}
	}
}

// ---------------------------------------------------------------- upstream override host

func testOverrideHost(t *testing.T, e *env) {
	h := e.h
	a2 := fmt.Sprintf("127.0.0.1:%d", e.a2.Port)
	a1 := fmt.Sprintf("127.0.0.1:%d", e.a1.Port)
	dead := fmt.Sprintf("127.0.0.1:%d", e.deadPort)
	// Not a host of any cluster. Closed, so an override that wrongly took effect shows as a 503.
	stray := fmt.Sprintf("127.0.0.1:%d", e.strayPort)
	for _, mode := range modes() {
		t.Run("SetUpstreamOverrideHost_"+mode, func(t *testing.T) {
			for i := 0; i < 6; i++ {
				r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-mode", mode, "x-test-override-host", a2)})
				if r.status != 200 || r.get("x-upstream") != "a2" {
					t.Fatalf("request %d: %d served by %q, want a2 every time", i, r.status, r.get("x-upstream"))
				}
			}
			for i := 0; i < 4; i++ {
				r := h.must(t, req{listener: "main", path: "/override/x", headers: hdrs("x-test-mode", mode, "x-test-override-host", a1)})
				if r.status != 200 || r.get("x-upstream") != "a1" {
					t.Fatalf("override to a1 in a cluster with a dead endpoint: %d %q", r.status, r.get("x-upstream"))
				}
			}
		})
		t.Run("SetUpstreamOverrideHost_BadHost_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-mode", mode, "x-test-override-host", "badhost")})
			if r.status != 403 || !strings.Contains(r.body, "invalid IP address") {
				t.Errorf("got %d %q, want 403 with the invalid IP address error", r.status, r.body)
			}
		})
		t.Run("SetUpstreamOverrideHost_InvalidHost_NotFound_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-mode", mode, "x-test-override-host", stray)})
			if r.status != 200 {
				t.Errorf("got %d, want 200 (host not in the cluster, not strict: normal load balancing)", r.status)
			}
		})
		t.Run("SetUpstreamOverrideHost_InvalidHost_Unavailable_"+mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", path: "/override/x", headers: hdrs("x-test-mode", mode, "x-test-override-host", dead)})
			if r.status != 503 {
				t.Errorf("got %d, want 503 (override to a cluster host nobody listens on)", r.status)
			}
		})
	}
	// Strict only survives on the worker thread: the posted (async) path drops it (golang_filter.cc
	// setUpstreamOverrideHost), so strict is checked in sync mode only.
	t.Run("SetUpstreamOverrideHost_InvalidHost_Strict_NotFound_async_strict_dropped", func(t *testing.T) {
		r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-mode", "async", "x-test-override-host", stray, "x-test-override-strict", "true")})
		if r.status != 200 {
			t.Errorf("got %d, want 200: from a goroutine the posted override uses strict=false (golang_filter.cc setUpstreamOverrideHost)", r.status)
		}
	})
	t.Run("SetUpstreamOverrideHost_InvalidHost_Strict_NotFound", func(t *testing.T) {
		r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-override-host", stray, "x-test-override-strict", "true")})
		if r.status != 503 {
			t.Errorf("got %d, want 503 (strict override to a host not in the cluster)", r.status)
		}
	})
}

// ---------------------------------------------------------------- drain

func testDrain(t *testing.T, e *env) {
	h := e.h
	for _, mode := range modes() {
		t.Run(mode, func(t *testing.T) {
			rc := h.dial(t, "main")
			rc.write("GET /echo HTTP/1.1\r\nhost: test\r\nx-test-drain: 1\r\nx-test-mode: " + mode + "\r\n\r\n")
			res, _, err := rc.readResponse("GET")
			if err != nil {
				t.Fatalf("response: %v", err)
			}
			// net/http moves "connection: close" from the header into res.Close
			if res.StatusCode != 200 || !(res.Close || strings.EqualFold(res.Header.Get("connection"), "close")) {
				t.Errorf("got %d connection=%q close=%v, want 200 with connection: close", res.StatusCode, res.Header.Get("connection"), res.Close)
			}
			if !rc.closedByPeer(5 * time.Second) {
				t.Errorf("connection still open after a drained response")
			}
		})
	}
	t.Run("NoDrainKeepsConnection", func(t *testing.T) {
		rc := h.dial(t, "main")
		for i := 0; i < 2; i++ {
			rc.write("GET /echo HTTP/1.1\r\nhost: test\r\n\r\n")
			res, _, err := rc.readResponse("GET")
			if err != nil || res.StatusCode != 200 {
				t.Fatalf("request %d on a kept-alive connection: %v", i, err)
			}
			if res.Close || strings.EqualFold(res.Header.Get("connection"), "close") {
				t.Fatalf("connection: close without drain")
			}
		}
	})
}

// ---------------------------------------------------------------- trailers

func testTrailers(t *testing.T, e *env) {
	h := e.h
	for _, mode := range modes() {
		t.Run(mode, func(t *testing.T) {
			r := h.must(t, req{listener: "main", method: "POST", path: trailersPath("resp", 0), body: "req",
				trailers: map[string]string{"x-trailer": "foo"}, headers: hdrs("x-test-mode", mode, "x-test-basic", "1")})
			if r.status != 200 || r.body != "resp" {
				t.Fatalf("got %d %q", r.status, r.body)
			}
			if r.trailer.Get("x-trailer") != "bar" || r.trailer.Get("x-go-trailer") != "from-go" || r.trailer.Get("x-resp-trailer-1") != "" {
				t.Errorf("response trailers %v, want x-trailer=bar, x-go-trailer=from-go, no x-resp-trailer-1", r.trailer)
			}
			r = h.must(t, req{listener: "main", method: "POST", path: "/echo", body: "req",
				trailers: map[string]string{"x-test-trailer-0": "foo", "x-test-trailer-1": "foo"}, headers: hdrs("x-test-mode", mode, "x-test-basic", "1")})
			rep := decodeEcho(t, r)
			if rep.Body != "req" || strings.Join(rep.trailer("x-test-trailer-0"), ",") != "bar" || len(rep.trailer("x-test-trailer-1")) != 0 || strings.Join(rep.trailer("x-test-trailer-2"), ",") != "bar" {
				t.Errorf("upstream saw body %q trailers %v", rep.Body, rep.Trailers)
			}
		})
	}
}

// ---------------------------------------------------------------- lifecycle

func testLifecycle(t *testing.T, e *env) {
	h := e.h
	for _, mode := range modes() {
		t.Run(mode, func(t *testing.T) {
			id := e.id("life")
			r := h.must(t, req{listener: "main", method: "POST", path: "/text?body=bye", body: "hi", headers: hdrs("x-test-id", id, "x-test-mode", mode)})
			if r.status != 200 || r.body != "bye" {
				t.Fatalf("got %d %q", r.status, r.body)
			}
			ev := h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "destroy") })
			order := []string{"decode-header", "decode-data", "encode-header", "encode-data", "complete", "log ", "destroy reason=0"}
			last := -1
			for _, o := range order {
				i := eventIndex(ev, o)
				if i < 0 || i < last {
					t.Fatalf("want order %v; events:\n%s", order, strings.Join(ev, "\n"))
				}
				last = i
			}
			if countEvents(ev, "destroy") != 1 || countEvents(ev, "complete") != 1 {
				t.Errorf("OnStreamComplete/OnDestroy must run once; events:\n%s", strings.Join(ev, "\n"))
			}
		})
	}
}

func testStray(t *testing.T, e *env) {
	h := e.h
	id := e.id("stray")
	r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-id", id, "x-test-stray", "1")})
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	ev := h.waitEvents(t, id, 10*time.Second, func(ev []string) bool { return hasEvent(ev, "stray done") })
	allowed := []string{"request has been finished", "golang filter has been destroyed", "not proccessing Go", "error: "}
	for _, op := range []string{"stray set-header", "stray continue", "stray property"} {
		i := eventIndex(ev, op)
		if i < 0 {
			t.Errorf("missing %s; events:\n%s", op, strings.Join(ev, "\n"))
			continue
		}
		msg := strings.TrimPrefix(ev[i], op+" ")
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(msg, a)
		}
		if !ok {
			t.Errorf("%s after OnDestroy: %q, want a clean Go error (one of %q)", op, msg, allowed)
		}
	}
	h.alive(t)
	if r := h.must(t, req{listener: "main", path: "/status/200"}); r.status != 200 {
		t.Errorf("host does not serve after a stray goroutine: %d", r.status)
	}
}

func testClientDisconnect(t *testing.T, e *env) {
	h := e.h
	// Request complete, Go idle, upstream slow: the client goes away while the host waits for the
	// response. OnDestroy with Normal, OnLog still runs, the host survives.
	t.Run("WhileWaitingForSlowUpstream", func(t *testing.T) {
		id := e.id("slowdisc")
		rc := h.dial(t, "main")
		rc.write("GET /delay/1500 HTTP/1.1\r\nhost: test.com\r\nx-test-mode: async\r\nx-test-id: " + id + "\r\n\r\n")
		h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "decode-header") })
		time.Sleep(200 * time.Millisecond)
		rc.c.Close()
		ev := h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "destroy") })
		if !hasEvent(ev, "destroy reason=0") || !hasEvent(ev, "log ") || hasEvent(ev, "encode-header") {
			t.Errorf("want OnLog and OnDestroy(Normal), no encode; events:\n%s", strings.Join(ev, "\n"))
		}
		h.alive(t)
	})
	t.Run("SlowUpstreamAsync", func(t *testing.T) {
		r := h.must(t, req{listener: "main", path: "/delay/300", headers: hdrs("x-test-mode", "async", "x-test-ed-mode", "upper")})
		if r.status != 200 || !strings.Contains(r.body, `"URI":"/DELAY/300"`) {
			t.Errorf("got %d %q", r.status, r.body)
		}
	})
	cases := []struct {
		name   string
		ctl    string
		reason string
	}{
		// Go idle (the host buffers the body for a StopAndBuffer): OnDestroy with Normal.
		{"WhileBuffering", "x-test-dh-ret: StopAndBuffer\r\n", "destroy reason=0"},
		// Go still processing a data phase in a goroutine: OnDestroy with Terminate.
		{"WhileGoProcessing", "x-test-mode: async\r\nx-test-data-sleep-ms: 400\r\n", "destroy reason=1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := e.id("disc")
			rc := h.dial(t, "main")
			rc.write("POST /echo HTTP/1.1\r\nhost: test.com\r\ncontent-length: 100\r\nx-test-id: " + id + "\r\n" + c.ctl + "\r\n" + strings.Repeat("h", 50))
			h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "decode-header") })
			if c.name == "WhileGoProcessing" {
				h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "decode-data") })
			} else {
				time.Sleep(50 * time.Millisecond)
			}
			rc.c.Close()
			ev := h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "destroy") })
			if !hasEvent(ev, c.reason) {
				t.Errorf("want %q; events:\n%s", c.reason, strings.Join(ev, "\n"))
			}
			if !hasEvent(ev, "log ") || eventIndex(ev, "log ") > eventIndex(ev, "destroy") {
				t.Errorf("OnLog must run (before OnDestroy) for a reset stream; events:\n%s", strings.Join(ev, "\n"))
			}
			if c.name == "WhileGoProcessing" {
				// the goroutine's Continue after OnDestroy must fail in Go (CAPIFilterIsDestroy or
				// CAPIFilterIsGone), not reach a freed stream
				ev = h.waitEvents(t, id, 5*time.Second, func(ev []string) bool { return hasEvent(ev, "goroutine panic decode-data") })
				i := eventIndex(ev, "goroutine panic decode-data")
				if !strings.Contains(ev[i], "golang filter has been destroyed") && !strings.Contains(ev[i], "request has been finished") {
					t.Errorf("late Continue: %q, want errFilterDestroyed or errRequestFinished", ev[i])
				}
			}
			h.alive(t)
			if r := h.must(t, req{listener: "main", path: "/status/200"}); r.status != 200 {
				t.Errorf("host does not serve after a client disconnect: %d", r.status)
			}
		})
	}
}

// ---------------------------------------------------------------- crossings

// testCrossings counts C<->Go crossings on the admin /stats (moe_host.capi.* for C functions Go
// called, moe_host.go.* for Go entry points the host called).
func testCrossings(t *testing.T, e *env) {
	h := e.h
	const n = 10
	measure := func(t *testing.T, do func()) map[string]int64 {
		time.Sleep(100 * time.Millisecond) // let earlier streams finish their lifecycle
		before := h.stats(t)
		do()
		time.Sleep(200 * time.Millisecond)
		after := h.stats(t)
		d := map[string]int64{}
		for k, v := range after {
			if strings.HasPrefix(k, "moe_host.") {
				d[k] = v - before[k]
			}
		}
		if len(d) == 0 {
			t.Fatalf("no moe_host.* stats on /stats")
		}
		return d
	}
	check := func(t *testing.T, d map[string]int64, want map[string]int64) {
		for k, v := range want {
			if d[k] != v {
				t.Errorf("%s: +%d, want +%d", k, d[k], v)
			}
		}
		if t.Failed() {
			var lines []string
			for _, k := range sortedKeys(d) {
				lines = append(lines, fmt.Sprintf("%s +%d", k, d[k]))
			}
			t.Logf("deltas:\n%s", strings.Join(lines, "\n"))
		}
	}
	// A header-only request and header-only response through a pass-through filter: one
	// OnHttpHeader per direction, no data, one log/complete/destroy, no CAPI calls from Go.
	t.Run("PassthroughHeaderOnly", func(t *testing.T) {
		d := measure(t, func() {
			for i := 0; i < n; i++ {
				if r := h.must(t, req{listener: "passthrough", path: "/status/204"}); r.status != 204 {
					t.Fatalf("status %d", r.status)
				}
			}
		})
		check(t, d, map[string]int64{
			"moe_host.go.on_http_header":          2 * n,
			"moe_host.go.on_http_data":            0,
			"moe_host.go.on_http_log":             n,
			"moe_host.go.on_http_stream_complete": n,
			"moe_host.go.on_http_destroy":         n,
			"moe_host.capi.continue":              0,
			"moe_host.capi.copy_headers":          0,
			"moe_host.capi.send_local_reply":      0,
		})
	})
	// Same through the conf filter in async mode: each header phase copies the headers once
	// and continues once from a goroutine.
	t.Run("ConfAsyncHeaderOnly", func(t *testing.T) {
		d := measure(t, func() {
			for i := 0; i < n; i++ {
				if r := h.must(t, req{listener: "main", path: "/status/204", headers: hdrs("x-test-mode", "async")}); r.status != 204 {
					t.Fatalf("status %d", r.status)
				}
			}
		})
		check(t, d, map[string]int64{
			// two golang filters on this listener (conf, reader)
			"moe_host.go.on_http_header":  4 * n,
			"moe_host.go.on_http_data":    0,
			"moe_host.go.on_http_log":     2 * n,
			"moe_host.go.on_http_destroy": 2 * n,
			"moe_host.capi.continue":      2 * n,
			// conf: request, response, OnLog request; reader: request, response, OnLog request
			"moe_host.capi.copy_headers":     6 * n,
			"moe_host.capi.send_local_reply": 0,
		})
	})
	// With a body: one OnHttpData per direction for a single-frame body.
	t.Run("PassthroughWithBody", func(t *testing.T) {
		d := measure(t, func() {
			for i := 0; i < n; i++ {
				if r := h.must(t, req{listener: "passthrough", method: "POST", path: "/text?body=abc", body: "hello"}); r.status != 200 {
					t.Fatalf("status %d", r.status)
				}
			}
		})
		if d["moe_host.go.on_http_data"] < 2*n {
			t.Errorf("moe_host.go.on_http_data +%d, want >= %d", d["moe_host.go.on_http_data"], 2*n)
		}
		check(t, d, map[string]int64{"moe_host.go.on_http_header": 2 * n, "moe_host.capi.get_buffer": 0})
	})
	// GetProperty from a goroutine takes the Yield path: one CAPI call answered by one SemaDec.
	t.Run("AsyncPropertyYield", func(t *testing.T) {
		d := measure(t, func() {
			for i := 0; i < n; i++ {
				r := h.must(t, req{listener: "main", path: "/status/204", headers: hdrs("x-test-mode", "async", "x-test-properties", "request.path")})
				if r.status != 204 || r.get("x-prop-request.path") != "/status/204" {
					t.Fatalf("got %d, property %q", r.status, r.get("x-prop-request.path"))
				}
			}
		})
		check(t, d, map[string]int64{
			"moe_host.capi.get_string_property": n,
			"moe_host.go.request_sema_dec":      n,
			"moe_host.capi.continue":            2 * n,
		})
	})
}

var _ = net.Dial
