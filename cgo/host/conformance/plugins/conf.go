package plugins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/envoyproxy/envoy/contrib/golang/common/go/api"
	"github.com/envoyproxy/envoy/contrib/golang/filters/http/source/go/pkg/http"
	"google.golang.org/protobuf/types/known/anypb"
)

// Phase names, used in control headers and in local reply bodies.
const (
	phDecodeHeader  = "decode-header"
	phDecodeData    = "decode-data"
	phDecodeTrailer = "decode-trailer"
	phEncodeHeader  = "encode-header"
	phEncodeData    = "encode-data"
	phEncodeTrailer = "encode-trailer"
)

// Control headers understood by the conf plugin (request headers; the encode side reads the values
// captured at decode time).
//
//	x-test-id: ID                        record events under ID
//	x-test-query: ID                     reply 200 with the events of ID (nothing else happens)
//	x-test-mode: sync|async              run every phase on the worker thread or in a goroutine
//	x-test-async-phases: p1,p2           run only these phases in a goroutine
//	x-test-sleep-ms: N                   sleep in header phases
//	x-test-data-sleep-ms: N              sleep in data phases
//	x-test-localreply: PHASE             SendLocalReply(403) in PHASE (gRPC status -1, or
//	                                     x-test-grpc-status)
//	x-test-panic: PHASE                  panic in PHASE (or in on-log, on-complete, on-destroy)
//	x-test-badapi: decode-data           call AddData while processing data (ErrInvalidPhase panic)
//	x-test-basic: 1                      header/trailer mutations + stream info headers
//	x-test-dh-ret, x-test-eh-ret: S      status returned by Decode/EncodeHeaders
//	                                     (Continue|StopAndBuffer|StopAndBufferWatermark)
//	x-test-dd-mode, x-test-ed-mode: M    data handling: continue|upper|buffer|watermark|nobuffer|
//	                                     inject|inject-stream|inject-sync
//	x-test-buffer-op: OP                 on the final decode data: drain|reset|resetafterdrain|len|
//	                                     prepend-append|set
//	x-test-adddata-dh / -eh / -dt / -et / -dd: DATA   AddData in that phase
//	x-test-inject-in-header: 1           InjectData from a goroutine during DecodeHeaders (-> 400)
//	x-test-dymeta: 1                     set + get dynamic metadata (namespace "conf")
//	x-test-filterstate: 1                set + get filter state ("conf.key"; "conf_key" too)
//	x-test-secret: NAME                  reply 200 with the generic secret NAME (404 if missing)
//	x-test-override-host: HOST           SetUpstreamOverrideHost (403 with the error on failure)
//	x-test-override-strict: true
//	x-test-drain: 1                      DrainConnectionUponCompletion
//	x-test-set-header: k=v               set request header k (e.g. to change the route)
//	x-test-route: clear|refresh          ClearRouteCache / RefreshRouteCache after x-test-set-header
//	x-test-properties: p1,p2             GetProperty for each, as response headers x-prop-<p>
//	x-test-route-props: p1,p2            GetProperty for each in DecodeHeaders, right after
//	                                     x-test-route (the property "route" means GetRouteName),
//	                                     as response headers x-dprop-<p>
//	x-test-stray: 1                      a goroutine touches the request after OnDestroy
//	x-test-dump-headers / -trailers: 1   reply 200 with Go's view of the request headers/trailers
//	x-test-conf-name: 1                  response header x-conf-name: the (merged) config's name
//	x-test-log: MARKER                   log MARKER at info, debug and warn
const (
	hID    = "x-test-id"
	hQuery = "x-test-query"
)

func init() {
	http.RegisterHttpFilterFactoryAndConfigParser("conf", confFactory, &confParser{})
}

type confConfig struct {
	name string
}

type confParser struct{}

func (p *confParser) Parse(a *anypb.Any, _ api.ConfigCallbackHandler) (interface{}, error) {
	m, err := structConfig(a)
	if err != nil {
		return nil, err
	}
	if v, ok := m["reject"].(bool); ok && v {
		return nil, fmt.Errorf("conf: config asked to be rejected")
	}
	return &confConfig{name: str(m, "name")}, nil
}

// Merge chains the names: "main>route_b".
func (p *confParser) Merge(parent, child interface{}) interface{} {
	pc, _ := parent.(*confConfig)
	cc, _ := child.(*confConfig)
	if pc == nil || cc == nil {
		return child
	}
	return &confConfig{name: pc.name + ">" + cc.name}
}

func confFactory(c interface{}, cb api.FilterCallbackHandler) api.StreamFilter {
	cfg, _ := c.(*confConfig)
	return &confFilter{cb: cb, cfg: cfg, destroyed: make(chan struct{})}
}

type confFilter struct {
	api.PassThroughStreamFilter

	cb  api.FilterCallbackHandler
	cfg *confConfig

	ctl map[string]string // x-test-* request headers, captured in DecodeHeaders
	id  string

	mu          sync.Mutex
	seenPhase   map[string]bool
	reqBodyLen  int
	reqBodySeen string
	reqMethod   string
	reqPath     string
	reqHost     string
	reqScheme   string
	// routeProps: what x-test-route-props read in DecodeHeaders after x-test-route.
	routeProps [][2]string

	destroyOnce sync.Once
	destroyed   chan struct{}
}

func (f *confFilter) async(phase string) bool {
	if f.ctl["x-test-mode"] == "async" {
		return true
	}
	for _, p := range strings.Split(f.ctl["x-test-async-phases"], ",") {
		if strings.TrimSpace(p) == phase {
			return true
		}
	}
	return false
}

func (f *confFilter) firstTime(phase string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seenPhase == nil {
		f.seenPhase = map[string]bool{}
	}
	if f.seenPhase[phase] {
		return false
	}
	f.seenPhase[phase] = true
	return true
}

func (f *confFilter) procCallbacks(phase string) api.FilterProcessCallbacks {
	if strings.HasPrefix(phase, "decode") {
		return f.cb.DecoderFilterCallbacks()
	}
	return f.cb.EncoderFilterCallbacks()
}

// run executes work on the worker thread (returning its status) or in a goroutine (returning
// Running and continuing with the status work returned). work returns api.LocalReply after it
// called SendLocalReply itself.
func (f *confFilter) run(phase string, work func() api.StatusType) api.StatusType {
	if !f.async(phase) {
		return work()
	}
	cbs := f.procCallbacks(phase)
	go func() {
		defer cbs.RecoverPanic()
		defer func() {
			if r := recover(); r != nil {
				record(f.id, "goroutine panic %s: %v", phase, r)
				panic(r) // to RecoverPanic
			}
		}()
		st := work()
		if st == api.LocalReply || st == api.Running {
			return
		}
		cbs.Continue(st)
	}()
	return api.Running
}

func sleepMs(v string) {
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		if n > 10000 {
			n = 10000
		}
		time.Sleep(time.Duration(n) * time.Millisecond)
	}
}

func parseStatus(s string, def api.StatusType) api.StatusType {
	switch s {
	case "Continue":
		return api.Continue
	case "StopAndBuffer":
		return api.StopAndBuffer
	case "StopAndBufferWatermark":
		return api.StopAndBufferWatermark
	case "StopNoBuffer":
		return api.StopNoBuffer
	}
	return def
}

// common handles the per-phase panic and local reply triggers. It returns true when a local reply
// was sent.
func (f *confFilter) common(phase string) bool {
	if !f.firstTime(phase) {
		return false
	}
	if f.ctl["x-test-panic"] == phase {
		record(f.id, "panic %s", phase)
		// not a runtime.Error: the suite greps the host output for sanitizer "runtime error"s
		panic("conformance: intentional panic in " + phase)
	}
	if f.ctl["x-test-localreply"] == phase {
		record(f.id, "localreply %s", phase)
		grpcStatus := int64(-1) // what plugins pass for "no gRPC status"
		if v, err := strconv.ParseInt(f.ctl["x-test-grpc-status"], 10, 64); err == nil {
			grpcStatus = v
		}
		f.procCallbacks(phase).SendLocalReply(403, "forbidden from go in "+phase+"\r\n",
			map[string][]string{
				"x-test-phase":   {phase},
				"content-type":   {"text/html"},
				"x-two-values":   {"foo", "bar"},
				"x-test-id-echo": {f.id}, // empty values are skipped by the host (cgo.cc)
			}, grpcStatus, "test_from_go")
		return true
	}
	return false
}

// ---------------------------------------------------------------- decode

func (f *confFilter) DecodeHeaders(h api.RequestHeaderMap, end bool) api.StatusType {
	f.ctl = map[string]string{}
	h.Range(func(k, v string) bool {
		if strings.HasPrefix(k, "x-test-") {
			if _, ok := f.ctl[k]; !ok {
				f.ctl[k] = v
			}
		}
		return true
	})
	f.id = f.ctl[hID]
	f.reqMethod, f.reqPath, f.reqHost, f.reqScheme = h.Method(), h.Path(), h.Host(), h.Scheme()

	if f.ctl["x-test-dump-headers"] != "" {
		// answer with Go's view of the request headers (CopyHeaders fidelity)
		f.cb.DecoderFilterCallbacks().SendLocalReply(200, dumpHeaders(h), nil, -1, "dump")
		return api.LocalReply
	}
	if q := f.ctl[hQuery]; q != "" {
		f.cb.DecoderFilterCallbacks().SendLocalReply(200, eventsOf(q), map[string][]string{"x-query": {q}}, -1, "query")
		return api.LocalReply
	}
	record(f.id, "%s end=%v", phDecodeHeader, end)

	return f.run(phDecodeHeader, func() api.StatusType { return f.decodeHeaders(h, end) })
}

func (f *confFilter) decodeHeaders(h api.RequestHeaderMap, end bool) api.StatusType {
	sleepMs(f.ctl["x-test-sleep-ms"])
	if f.common(phDecodeHeader) {
		return api.LocalReply
	}
	dec := f.cb.DecoderFilterCallbacks()
	async := f.async(phDecodeHeader)

	if f.ctl["x-test-basic"] != "" {
		if v, ok := h.Get("x-test-header-0"); ok {
			h.Set("test-x-set-header-0", v)
		}
		h.Del("x-test-header-1")
		h.Add("existed-header", "bar")
		h.Add("newly-added-header", "foo")
		h.Add("newly-added-header", "bar")
		h.Set("req-downstream-local-address", f.cb.StreamInfo().DownstreamLocalAddress())
		h.Set("req-downstream-remote-address", f.cb.StreamInfo().DownstreamRemoteAddress())
		h.Set("req-route-name", f.cb.StreamInfo().GetRouteName())
		h.Set("req-worker-id", strconv.Itoa(int(f.cb.StreamInfo().WorkerID())))
		h.Set("req-async", strconv.FormatBool(async))
		// GetRaw: envoyGoFilterHttpGetHeader, first value, key lowercased by the host
		h.Set("req-getraw", h.GetRaw("X-Test-Header-0")+"|"+h.GetRaw("existed-header")+"|"+h.GetRaw("x-missing"))
		// nothing upstream yet while decoding (ValueNotFound)
		_, upKnown := f.cb.StreamInfo().UpstreamRemoteAddress()
		_, codeKnown := f.cb.StreamInfo().ResponseCode()
		h.Set("req-upstream-known", strconv.FormatBool(upKnown))
		h.Set("req-response-code-known", strconv.FormatBool(codeKnown))
	}

	if name := f.ctl["x-test-secret"]; name != "" {
		v, ok := f.cb.SecretManager().GetGenericSecret(name)
		record(f.id, "secret %s found=%v", name, ok)
		code := 200
		if !ok {
			code = 404
		}
		dec.SendLocalReply(code, v, nil, -1, "secret")
		return api.LocalReply
	}

	if w := f.ctl["x-test-crlf"]; w != "" {
		injectCRLF(w, "req", h, func(p string) { h.SetPath(p) })
	}

	if host := f.ctl["x-test-override-host"]; host != "" {
		err := dec.SetUpstreamOverrideHost(host, f.ctl["x-test-override-strict"] == "true")
		record(f.id, "override-host %s err=%v", host, err)
		if err != nil {
			dec.SendLocalReply(403, "override host error: "+err.Error(), nil, -1, "override_host")
			return api.LocalReply
		}
	}

	if m := f.ctl["x-test-log"]; m != "" {
		// through envoyGoFilterLog at the host's level (-l info: Info shown, Debug not)
		f.cb.Log(api.Info, "conformance-info "+m)
		f.cb.Log(api.Debug, "conformance-debug "+m)
		api.LogWarnf("conformance-warn %s", m)
	}

	if f.ctl["x-test-drain"] != "" {
		f.cb.StreamInfo().DrainConnectionUponCompletion()
	}

	if f.ctl["x-test-dymeta"] != "" {
		md := f.cb.StreamInfo().DynamicMetadata()
		md.Set("conf", "key", "value-from-conf")
		md.Set("conf", "num", 42)
		got := md.Get("conf")
		h.Set("x-dymeta-self", fmt.Sprintf("%v/%v", got["key"], got["num"]))
	}

	if f.ctl["x-test-filterstate"] != "" {
		fs := f.cb.StreamInfo().FilterState()
		fs.SetString("conf.key", "fs-value", api.StateTypeMutable, api.LifeSpanRequest, api.None)
		// A key without a dot, so GetProperty("filter_state.<key>") can reach it.
		fs.SetString("conf_key", "fs-value", api.StateTypeMutable, api.LifeSpanRequest, api.None)
		h.Set("x-filterstate-self", fs.GetString("conf.key"))
		h.Set("x-filterstate-missing", "["+fs.GetString("conf.missing")+"]")
	}

	if kv := f.ctl["x-test-set-header"]; kv != "" {
		if k, v, ok := strings.Cut(kv, "="); ok {
			h.Set(k, v)
		}
	}
	switch f.ctl["x-test-route"] {
	case "clear":
		f.cb.ClearRouteCache()
	case "refresh":
		f.cb.RefreshRouteCache()
	}
	if props := f.ctl["x-test-route-props"]; props != "" {
		var got [][2]string
		for _, p := range strings.Split(props, ",") {
			p = strings.TrimSpace(p)
			var v string
			if p == "route" {
				v = f.cb.StreamInfo().GetRouteName()
			} else if pv, err := f.cb.GetProperty(p); err != nil {
				v = "ERR:" + err.Error()
			} else {
				v = pv
			}
			got = append(got, [2]string{p, v})
		}
		f.mu.Lock()
		f.routeProps = got
		f.mu.Unlock()
	}

	if d, ok := f.ctl["x-test-adddata-dh"]; ok {
		if end && f.reqMethod == "GET" {
			h.SetMethod("POST")
		}
		h.Del("content-length")
		dec.AddData([]byte(d), false)
	}

	if f.ctl["x-test-inject-in-header"] != "" {
		// InjectData is only valid while processing data; Envoy returns CAPIInvalidPhase and the
		// SDK panics. Catch it and answer 400 with the panic text.
		msg := catch(func() { dec.InjectData([]byte("nope")) })
		record(f.id, "inject-in-header %s", msg)
		dec.SendLocalReply(400, "inject in header: "+msg, nil, -1, "inject")
		return api.LocalReply
	}

	if f.ctl["x-test-stray"] != "" {
		go f.stray(h)
	}

	return parseStatus(f.ctl["x-test-dh-ret"], api.Continue)
}

// stray waits for OnDestroy, then uses the request from a goroutine. Every call must fail in Go
// (panic recovered here or an error), never crash the host.
func (f *confFilter) stray(h api.RequestHeaderMap) {
	select {
	case <-f.destroyed:
	case <-time.After(10 * time.Second):
		record(f.id, "stray timeout")
		return
	}
	time.Sleep(30 * time.Millisecond)
	record(f.id, "stray set-header %s", catch(func() { h.Set("x-late", "1") }))
	record(f.id, "stray continue %s", catch(func() { f.cb.DecoderFilterCallbacks().Continue(api.Continue) }))
	record(f.id, "stray property %s", catch(func() {
		_, err := f.cb.GetProperty("request.path")
		if err != nil {
			panic("error: " + err.Error())
		}
	}))
	record(f.id, "stray dymeta %s", catch(func() { f.cb.StreamInfo().DynamicMetadata().Set("conf", "late", "1") }))
	record(f.id, "stray done")
}

// catch runs fn and returns "ok" or the recovered panic as text.
func catch(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	fn()
	return "ok"
}

func (f *confFilter) DecodeData(b api.BufferInstance, end bool) api.StatusType {
	record(f.id, "%s len=%d end=%v data=%s", phDecodeData, b.Len(), end, short(b.Bytes()))
	return f.run(phDecodeData, func() api.StatusType { return f.decodeData(b, end) })
}

func (f *confFilter) decodeData(b api.BufferInstance, end bool) api.StatusType {
	sleepMs(f.ctl["x-test-data-sleep-ms"])
	if f.common(phDecodeData) {
		return api.LocalReply
	}
	dec := f.cb.DecoderFilterCallbacks()

	if f.ctl["x-test-badapi"] == phDecodeData {
		dec.AddData([]byte("bad"), true) // panics with ErrInvalidPhase -> SendPanicReply (500)
	}
	if d, ok := f.ctl["x-test-adddata-dd"]; ok && f.firstTime("adddata-dd") {
		msg := catch(func() { dec.AddData([]byte(d), true) })
		record(f.id, "adddata-dd %s", msg)
		if msg != "ok" {
			_ = b.SetString("addData called in DecodeData is not allowed: " + msg)
		}
	}

	f.mu.Lock()
	f.reqBodyLen += b.Len()
	f.mu.Unlock()

	if end {
		if st, done := f.bufferOp(b); done {
			return st
		}
	}
	return f.dataMode(phDecodeData, f.ctl["x-test-dd-mode"], b, end)
}

func (f *confFilter) bufferOp(b api.BufferInstance) (api.StatusType, bool) {
	op := f.ctl["x-test-buffer-op"]
	if op == "" {
		return 0, false
	}
	orig := b.Len()
	switch op {
	case "drain":
		b.Drain(5)
		if b.Len() != orig-5 || len(b.Bytes()) != orig-5 {
			panic(fmt.Sprintf("drain: len %d bytes %d, want %d", b.Len(), len(b.Bytes()), orig-5))
		}
	case "reset":
		b.Reset()
		if b.Len() != 0 || len(b.Bytes()) != 0 {
			panic("reset: buffer not empty")
		}
	case "resetafterdrain":
		b.Drain(10)
		b.Reset()
		if b.Len() != 0 || len(b.Bytes()) != 0 {
			panic("reset after drain: buffer not empty")
		}
	case "len":
		if b.Len() != len(b.Bytes()) {
			panic("len mismatch")
		}
		_ = b.SetString(fmt.Sprintf("len=%d", orig))
	case "prepend-append":
		_ = b.PrependString("<")
		_ = b.AppendString(">")
		_ = b.Prepend([]byte("["))
		_ = b.Append([]byte("]"))
	case "set":
		_ = b.SetString("replaced")
		if b.String() != "replaced" {
			panic("set: got " + b.String())
		}
	}
	record(f.id, "buffer-op %s %d->%d", op, orig, b.Len())
	return api.Continue, true
}

// dataMode implements the data statuses for both directions.
func (f *confFilter) dataMode(phase, mode string, b api.BufferInstance, end bool) api.StatusType {
	switch mode {
	case "upper":
		_ = b.Set(bytes.ToUpper(b.Bytes()))
		return api.Continue
	case "buffer":
		// StopAndBuffer: this chunk stays with Envoy; Go sees the later chunks together at the end.
		if !end {
			return api.StopAndBuffer
		}
		_ = b.Set(bytes.ToUpper(b.Bytes()))
		return api.Continue
	case "watermark":
		// StopAndBufferWatermark: chunks are held (with Go's changes), each later chunk is seen
		// on its own.
		_ = b.Set(bytes.ToUpper(b.Bytes()))
		if !end {
			return api.StopAndBufferWatermark
		}
		return api.Continue
	case "nobuffer":
		// StopNoBuffer: every chunk seen with end_stream=false is dropped.
		_ = b.Set(bytes.ToUpper(b.Bytes()))
		if !end {
			return api.StopNoBuffer
		}
		return api.Continue
	case "inject":
		// non-buffered injection from a goroutine: "[chunk]" for every chunk, original dropped.
		chunk := append([]byte(nil), b.Bytes()...)
		cbs := f.procCallbacks(phase)
		go func() {
			defer cbs.RecoverPanic()
			if len(chunk) > 0 {
				cbs.InjectData([]byte("[" + string(chunk) + "]"))
			}
			if !end {
				cbs.Continue(api.StopNoBuffer)
				return
			}
			b.Reset()
			cbs.Continue(api.Continue)
		}()
		return api.Running
	case "inject-stream":
		// buffer everything, then stream it back in pieces from a goroutine.
		if !end {
			return api.StopAndBuffer
		}
		all := append([]byte(nil), b.Bytes()...)
		cbs := f.procCallbacks(phase)
		go func() {
			defer cbs.RecoverPanic()
			for i := 0; i < 5; i++ {
				cbs.InjectData([]byte(fmt.Sprintf("part%d:%s;", i, all)))
				time.Sleep(5 * time.Millisecond)
			}
			_ = b.SetString("end")
			cbs.Continue(api.Continue)
		}()
		return api.Running
	case "inject-sync":
		// InjectData on the worker thread is CAPIInvalidScene; answer 400 with the panic text.
		msg := catch(func() { f.procCallbacks(phase).InjectData([]byte("nope")) })
		record(f.id, "inject-sync %s", msg)
		f.procCallbacks(phase).SendLocalReply(400, "inject sync: "+msg, nil, -1, "inject")
		return api.LocalReply
	}
	return api.Continue
}

func (f *confFilter) DecodeTrailers(t api.RequestTrailerMap) api.StatusType {
	record(f.id, "%s", phDecodeTrailer)
	return f.run(phDecodeTrailer, func() api.StatusType {
		sleepMs(f.ctl["x-test-sleep-ms"])
		if f.common(phDecodeTrailer) {
			return api.LocalReply
		}
		if w := f.ctl["x-test-crlf"]; w != "" {
			injectCRLF(w, "req-trailer", t, nil)
		}
		if f.ctl["x-test-basic"] != "" {
			t.Add("existed-trailer", "bar")
			t.Set("x-test-trailer-0", "bar")
			t.Del("x-test-trailer-1")
			t.Set("x-test-trailer-2", "bar")
		}
		if f.ctl["x-test-dump-trailers"] != "" {
			f.cb.DecoderFilterCallbacks().SendLocalReply(200, dumpHeaders(t), nil, -1, "dump")
			return api.LocalReply
		}
		if d, ok := f.ctl["x-test-adddata-dt"]; ok {
			f.cb.DecoderFilterCallbacks().AddData([]byte(d), true)
		}
		return api.Continue
	})
}

// ---------------------------------------------------------------- encode

func (f *confFilter) EncodeHeaders(h api.ResponseHeaderMap, end bool) api.StatusType {
	if f.ctl == nil { // a local reply before our DecodeHeaders ran
		f.ctl = map[string]string{}
	}
	if f.ctl[hQuery] != "" {
		return api.Continue
	}
	status, _ := h.Status()
	record(f.id, "%s status=%d end=%v", phEncodeHeader, status, end)
	return f.run(phEncodeHeader, func() api.StatusType { return f.encodeHeaders(h, end) })
}

func (f *confFilter) encodeHeaders(h api.ResponseHeaderMap, end bool) api.StatusType {
	sleepMs(f.ctl["x-test-sleep-ms"])
	if f.common(phEncodeHeader) {
		return api.LocalReply
	}
	si := f.cb.StreamInfo()
	if w := f.ctl["x-test-crlf"]; w != "" {
		injectCRLF(w, "resp", h, nil)
	}
	if f.ctl["x-test-basic"] != "" {
		if v, ok := h.Get("x-test-header-0"); ok {
			h.Set("test-x-set-header-0", v)
		}
		h.Del("x-test-header-1")
		h.Add("existed-header", "bar")
		h.Add("newly-added-header", "foo")
		h.Add("newly-added-header", "bar")
		f.mu.Lock()
		h.Set("test-req-body-length", strconv.Itoa(f.reqBodyLen))
		f.mu.Unlock()
		h.Set("rsp-route-name", si.GetRouteName())
		if p, ok := si.Protocol(); ok {
			h.Set("rsp-protocol", p)
		}
		h.Set("rsp-filter-chain-name", si.FilterChainName())
		if c, ok := si.ResponseCode(); ok {
			h.Set("rsp-response-code", strconv.Itoa(int(c)))
		}
		if d, ok := si.ResponseCodeDetails(); ok {
			h.Set("rsp-response-code-details", d)
		}
		if u, ok := si.UpstreamRemoteAddress(); ok {
			h.Set("rsp-upstream-host", u)
		}
		if u, ok := si.UpstreamLocalAddress(); ok {
			h.Set("rsp-upstream-local", u)
		}
		if c, ok := si.UpstreamClusterName(); ok {
			h.Set("rsp-upstream-cluster", c)
		}
		h.Set("rsp-attempt-count", strconv.Itoa(int(si.AttemptCount())))
		if s, ok := h.Status(); ok {
			h.Set("rsp-status", strconv.Itoa(s))
		}
		h.Set("test-method", f.reqMethod)
		h.Set("test-path", f.reqPath)
		h.Set("test-host", f.reqHost)
		h.Set("test-scheme", f.reqScheme)
		h.Set("test-log-level", f.cb.LogLevel().String())
		h.Set("test-ssl", strconv.FormatBool(si.DownstreamSslConnection() != nil))
	}
	if f.ctl["x-test-conf-name"] != "" && f.cfg != nil {
		h.Set("x-conf-name", f.cfg.name)
	}
	f.mu.Lock()
	for _, kv := range f.routeProps {
		h.Set("x-dprop-"+kv[0], kv[1])
	}
	f.mu.Unlock()
	if props := f.ctl["x-test-properties"]; props != "" {
		for _, p := range strings.Split(props, ",") {
			p = strings.TrimSpace(p)
			v, err := f.cb.GetProperty(p)
			if err != nil {
				v = "ERR:" + err.Error()
			}
			h.Set("x-prop-"+p, v)
		}
	}
	if f.ctl["x-test-dymeta"] != "" {
		got := si.DynamicMetadata().Get("conf")
		h.Set("x-dymeta-encode", fmt.Sprintf("%v/%v", got["key"], got["reader"]))
	}
	if f.ctl["x-test-filterstate"] != "" {
		h.Set("x-filterstate-encode", si.FilterState().GetString("conf.key"))
	}
	if d, ok := f.ctl["x-test-adddata-eh"]; ok {
		// the added body makes the upstream's content-length wrong: let the codec frame it
		h.Del("content-length")
		f.cb.EncoderFilterCallbacks().AddData([]byte(d), false)
	}
	return parseStatus(f.ctl["x-test-eh-ret"], api.Continue)
}

func (f *confFilter) EncodeData(b api.BufferInstance, end bool) api.StatusType {
	if f.ctl[hQuery] != "" {
		return api.Continue
	}
	record(f.id, "%s len=%d end=%v data=%s", phEncodeData, b.Len(), end, short(b.Bytes()))
	return f.run(phEncodeData, func() api.StatusType {
		sleepMs(f.ctl["x-test-data-sleep-ms"])
		if f.common(phEncodeData) {
			return api.LocalReply
		}
		return f.dataMode(phEncodeData, f.ctl["x-test-ed-mode"], b, end)
	})
}

func (f *confFilter) EncodeTrailers(t api.ResponseTrailerMap) api.StatusType {
	if f.ctl[hQuery] != "" {
		return api.Continue
	}
	record(f.id, "%s", phEncodeTrailer)
	return f.run(phEncodeTrailer, func() api.StatusType {
		sleepMs(f.ctl["x-test-sleep-ms"])
		if f.common(phEncodeTrailer) {
			return api.LocalReply
		}
		if w := f.ctl["x-test-crlf"]; w != "" {
			injectCRLF(w, "resp-trailer", t, nil)
		}
		if f.ctl["x-test-basic"] != "" {
			t.Set("x-go-trailer", "from-go")
			t.Del("x-resp-trailer-1")
		}
		if d, ok := f.ctl["x-test-adddata-et"]; ok {
			f.cb.EncoderFilterCallbacks().AddData([]byte(d), true)
		}
		return api.Continue
	})
}

// ---------------------------------------------------------------- lifecycle

func (f *confFilter) OnLogDownstreamStart(req api.RequestHeaderMap) {
	id, _ := req.Get(hID)
	p, _ := req.Get(":path")
	record(id, "log-start path=%s", p)
}

// OnLogDownstreamPeriodic runs every access_log_flush_interval while the stream lives.
func (f *confFilter) OnLogDownstreamPeriodic(req api.RequestHeaderMap, _ api.RequestTrailerMap, _ api.ResponseHeaderMap, _ api.ResponseTrailerMap) {
	id, _ := req.Get(hID)
	p, _ := req.Get(":path")
	record(id, "log-periodic path=%s", p)
}

func (f *confFilter) OnLog(req api.RequestHeaderMap, reqT api.RequestTrailerMap, resp api.ResponseHeaderMap, respT api.ResponseTrailerMap) {
	if v, _ := req.Get("x-test-panic"); v == "on-log" {
		panic("conformance: intentional panic in OnLog")
	}
	id, _ := req.Get(hID)
	if id == "" {
		return
	}
	p, _ := req.Get(":path")
	ev := "log path=" + p
	if reqT != nil {
		v, _ := reqT.Get("x-trailer")
		ev += " req-trailer=" + v
	} else {
		ev += " req-trailer=<nil>"
	}
	if resp != nil {
		s, _ := resp.Status()
		ev += fmt.Sprintf(" resp-status=%d", s)
	} else {
		ev += " resp-status=<nil>"
	}
	if respT != nil {
		v, _ := respT.Get("x-trailer")
		ev += " resp-trailer=" + v
	} else {
		ev += " resp-trailer=<nil>"
	}
	if c, ok := f.cb.StreamInfo().ResponseCode(); ok {
		ev += fmt.Sprintf(" code=%d", c)
	}
	if v, err := f.cb.GetProperty("response.code"); err == nil {
		ev += " prop-code=" + v
	}
	if v, err := f.cb.GetProperty("response.code_details"); err == nil {
		ev += " details=" + v
	}
	if v, err := f.cb.GetProperty("response.size"); err == nil {
		ev += " size=" + v
	}
	record(id, "%s", ev)
}

func (f *confFilter) OnStreamComplete() {
	record(f.id, "complete")
	if f.ctl["x-test-panic"] == "on-complete" {
		panic("conformance: intentional panic in OnStreamComplete")
	}
}

func (f *confFilter) OnDestroy(reason api.DestroyReason) {
	record(f.id, "destroy reason=%d", int(reason))
	f.destroyOnce.Do(func() { close(f.destroyed) })
	if f.ctl["x-test-panic"] == "on-destroy" {
		panic("conformance: intentional panic in OnDestroy")
	}
}

// dumpHeaders renders a header map as JSON {key: [values...]} (values in order).
func dumpHeaders(h api.HeaderMap) string {
	m := map[string][]string{}
	h.Range(func(k, v string) bool {
		m[k] = append(m[k], v)
		return true
	})
	out, _ := json.Marshal(m)
	return string(out)
}

// injectCRLF puts CR/LF/NUL into a header map when x-test-crlf names this place ("<where>-value",
// "<where>-key", "<where>-nul", or "req-path"): the host must never write such strings raw.
func injectCRLF(which, where string, m interface {
	Set(key, value string)
}, setPath func(string)) {
	switch which {
	case where + "-value":
		m.Set("x-inj", "a\r\nx-smuggled: yes")
	case where + "-key":
		m.Set("x-inj\r\nx-smuggled", "yes")
	case where + "-nul":
		m.Set("x-inj", "a\x00b")
	case where + "-path":
		if setPath != nil {
			setPath("/echo HTTP/1.1\r\nx-smuggled: yes\r\nx-pad: /")
		}
	}
}
