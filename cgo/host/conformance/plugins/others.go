package plugins

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/envoyproxy/envoy/contrib/golang/common/go/api"
	"github.com/envoyproxy/envoy/contrib/golang/filters/http/source/go/pkg/http"
	"google.golang.org/protobuf/types/known/anypb"
)

func init() {
	http.RegisterHttpFilterFactoryAndConfigParser("reader", readerFactory, http.NullParser)
	http.RegisterHttpFilterFactoryAndConfigParser("echo", echoFactory, http.NullParser)
	http.RegisterHttpFilterFactoryAndConfigParser("passthrough", passthroughFactory, http.NullParser)
	http.RegisterHttpFilterFactoryAndConfigParser("keyauth-sdk", keyAuthSDKFactory, http.NullParser)
	http.RegisterHttpFilterFactoryAndConfigParser("routeconfig", routeConfigFactory, &routeConfigParser{})
	http.RegisterHttpFilterFactoryAndConfigParser("metric", metricFactory, &metricParser{})
}

// ---------------------------------------------------------------- reader

// reader is a second golang filter in the same chain. With "x-test-reader: 1" it copies what the
// conf filter stored in dynamic metadata and filter state into request headers, and adds its own
// dynamic metadata key, which conf reads back in its encode phase. With "x-test-reader-mode: async"
// it does so from a goroutine (the CAPI calls then take the Yield path).
//
// It also records its own lifecycle under the request's x-test-id, prefixed "reader ". When an
// earlier filter answered with a local reply its DecodeHeaders never runs; the id then comes from
// the "x-test-id-echo" response header conf adds to its local replies, and events seen before the
// id is known are kept and flushed then.
type readerFilter struct {
	api.PassThroughStreamFilter
	cb      api.FilterCallbackHandler
	mu      sync.Mutex
	id      string
	pending []string
}

func (r *readerFilter) event(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := "reader " + fmt.Sprintf(format, args...)
	if r.id == "" {
		r.pending = append(r.pending, ev)
		return
	}
	record(r.id, "%s", ev)
}

func (r *readerFilter) setID(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.id != "" || id == "" {
		return
	}
	r.id = id
	for _, ev := range r.pending {
		record(id, "%s", ev)
	}
	r.pending = nil
}

func (r *readerFilter) EncodeHeaders(h api.ResponseHeaderMap, end bool) api.StatusType {
	if id, ok := h.Get("x-test-id-echo"); ok { // set by conf's local replies
		r.setID(id)
	}
	s, _ := h.Status()
	r.event("encode-header status=%d", s)
	return api.Continue
}

func (r *readerFilter) OnLog(req api.RequestHeaderMap, _ api.RequestTrailerMap, _ api.ResponseHeaderMap, _ api.ResponseTrailerMap) {
	var id string
	if msg := catch(func() { id, _ = req.Get("x-test-id") }); msg != "ok" {
		// Envoy passes no request headers to OnLog when this filter never decoded but already
		// called into Go (Filter::log sets request_headers_ only from initRequest()).
		r.event("log req-headers-unavailable: %s", msg)
		return
	}
	r.setID(id)
	r.event("log")
}

func (r *readerFilter) OnDestroy(reason api.DestroyReason) {
	r.event("destroy reason=%d", int(reason))
}

func readerFactory(_ interface{}, cb api.FilterCallbackHandler) api.StreamFilter {
	return &readerFilter{cb: cb}
}

func (r *readerFilter) DecodeHeaders(h api.RequestHeaderMap, end bool) api.StatusType {
	id, _ := h.Get("x-test-id")
	r.setID(id)
	r.event("decode-header")
	if v, _ := h.Get("x-test-reader"); v == "" {
		return api.Continue
	}
	work := func() {
		si := r.cb.StreamInfo()
		md := si.DynamicMetadata().Get("conf")
		h.Set("x-reader-dymeta", fmt.Sprintf("%v", md["key"]))
		si.DynamicMetadata().Set("conf", "reader", "seen")
		h.Set("x-reader-filterstate", si.FilterState().GetString("conf.key"))
	}
	if m, _ := h.Get("x-test-reader-mode"); m == "async" {
		dec := r.cb.DecoderFilterCallbacks()
		go func() {
			defer dec.RecoverPanic()
			work()
			dec.Continue(api.Continue)
		}()
		return api.Running
	}
	work()
	return api.Continue
}

// ---------------------------------------------------------------- echo

type echoFilter struct {
	api.PassThroughStreamFilter
	cb api.FilterCallbackHandler
}

func echoFactory(_ interface{}, cb api.FilterCallbackHandler) api.StreamFilter {
	return &echoFilter{cb: cb}
}

func (e *echoFilter) DecodeHeaders(h api.RequestHeaderMap, end bool) api.StatusType {
	e.cb.DecoderFilterCallbacks().SendLocalReply(403, fmt.Sprintf("echo from go, path: %s\r\n", h.Path()), nil, -1, "echo")
	return api.LocalReply
}

// ---------------------------------------------------------------- passthrough

type passthroughFilter struct {
	api.PassThroughStreamFilter
}

func passthroughFactory(_ interface{}, _ api.FilterCallbackHandler) api.StreamFilter {
	return &passthroughFilter{}
}

// ---------------------------------------------------------------- keyauth-sdk

// keyAuthSDKFilter does at the ABI what moe's key-auth does in the benchmark's B2 (cmd/moebench
// config B1K), written with the bare SDK: read x-api-key (one header copy), compare it with the
// one key, then set x-consumer-name and the moe.consumer filter state moe exports (one
// set_header, one set_string_filter_state), or answer 401. The same crossings and Envoy work as
// B2 without moe, so B2 minus this is what moe itself adds.
type keyAuthSDKFilter struct {
	api.PassThroughStreamFilter
	cb api.FilterCallbackHandler
}

const (
	keyAuthSDKKey      = "bench-client-key-0001"
	keyAuthSDKConsumer = `{"name":"bench","group":"clients"}`
)

func keyAuthSDKFactory(_ interface{}, cb api.FilterCallbackHandler) api.StreamFilter {
	return &keyAuthSDKFilter{cb: cb}
}

func (f *keyAuthSDKFilter) DecodeHeaders(h api.RequestHeaderMap, _ bool) api.StatusType {
	if k, _ := h.Get("x-api-key"); k != keyAuthSDKKey {
		f.cb.DecoderFilterCallbacks().SendLocalReply(401, "Unauthorized", nil, -1, "keyauth_sdk_denied")
		return api.LocalReply
	}
	h.Set("x-consumer-name", "bench")
	f.cb.StreamInfo().FilterState().SetString("moe.consumer", keyAuthSDKConsumer, api.StateTypeMutable, api.LifeSpanFilterChain, api.None)
	return api.Continue
}

// ---------------------------------------------------------------- routeconfig

// MergeCount counts Merge calls (exported in a response header).
var mergeCount atomic.Int64

type routeConfig struct {
	chain  string // names of the configs merged so far, "filter>vhost>route"
	remove string // response header to remove
	set    string // response header to set to "test-value"
}

type routeConfigParser struct{}

func (p *routeConfigParser) Parse(a *anypb.Any, cb api.ConfigCallbackHandler) (interface{}, error) {
	m, err := structConfig(a)
	if err != nil {
		return nil, err
	}
	c := &routeConfig{chain: str(m, "name"), remove: str(m, "remove"), set: str(m, "set")}
	if c.chain == "" {
		return nil, fmt.Errorf("routeconfig: name is required")
	}
	return c, nil
}

func (p *routeConfigParser) Merge(parent, child interface{}) interface{} {
	mergeCount.Add(1)
	pc := parent.(*routeConfig)
	cc := child.(*routeConfig)
	out := &routeConfig{chain: pc.chain + ">" + cc.chain, remove: pc.remove, set: pc.set}
	if cc.remove != "" {
		out.remove = cc.remove
	}
	if cc.set != "" {
		out.set = cc.set
	}
	return out
}

type routeConfigFilter struct {
	api.PassThroughStreamFilter
	cfg *routeConfig
}

func routeConfigFactory(c interface{}, _ api.FilterCallbackHandler) api.StreamFilter {
	return &routeConfigFilter{cfg: c.(*routeConfig)}
}

func (r *routeConfigFilter) EncodeHeaders(h api.ResponseHeaderMap, end bool) api.StatusType {
	if r.cfg.remove != "" {
		h.Del(r.cfg.remove)
	}
	if r.cfg.set != "" {
		h.Set(r.cfg.set, "test-value")
	}
	h.Set("x-config-chain", r.cfg.chain)
	h.Set("x-merge-count", strconv.FormatInt(mergeCount.Load(), 10))
	return api.Continue
}

// ---------------------------------------------------------------- metric

type metricConfig struct {
	counter api.CounterMetric
	gauge   api.GaugeMetric
	hist    *histogram // nil when histogram_name is not configured
}

type metricParser struct{}

func (p *metricParser) Parse(a *anypb.Any, cb api.ConfigCallbackHandler) (interface{}, error) {
	m, err := structConfig(a)
	if err != nil {
		return nil, err
	}
	if cb == nil {
		return nil, fmt.Errorf("metric: no config callbacks (route config is not supported)")
	}
	cn, gn := str(m, "counter_name"), str(m, "gauge_name")
	if cn == "" || gn == "" {
		return nil, fmt.Errorf("metric: counter_name and gauge_name are required")
	}
	mc := &metricConfig{counter: cb.DefineCounterMetric(cn), gauge: cb.DefineGaugeMetric(gn)}
	if hn := str(m, "histogram_name"); hn != "" {
		if mc.hist = defineHistogram(cb, hn); mc.hist == nil {
			return nil, fmt.Errorf("metric: defining histogram %q failed", hn)
		}
	}
	return mc, nil
}

func (p *metricParser) Merge(parent, child interface{}) interface{} { return parent }

type metricFilter struct {
	api.PassThroughStreamFilter
	cfg *metricConfig
	cb  api.FilterCallbackHandler
}

func metricFactory(c interface{}, cb api.FilterCallbackHandler) api.StreamFilter {
	return &metricFilter{cfg: c.(*metricConfig), cb: cb}
}

// Per request: counter +1 (a negative increment is ignored by Envoy for counters), gauge +3 -1.
// "x-test-metric-record: N" additionally records N on both (counter: add, gauge: set);
// "x-test-metric-hist: N" records N on the histogram.
// The values read back are returned to the upstream as request headers.
func (m *metricFilter) DecodeHeaders(h api.RequestHeaderMap, end bool) api.StatusType {
	work := func() {
		m.cfg.counter.Increment(1)
		m.cfg.counter.Increment(-5)
		m.cfg.gauge.Increment(3)
		m.cfg.gauge.Increment(-1)
		if v, ok := h.Get("x-test-metric-record"); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
				m.cfg.counter.Record(n)
				m.cfg.gauge.Record(n)
			}
		}
		if v, ok := h.Get("x-test-metric-hist"); ok && m.cfg.hist != nil {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
				h.Set("x-metric-hist-recorded", strconv.FormatBool(m.cfg.hist.record(n)))
			}
		}
		h.Set("x-metric-counter", strconv.FormatUint(m.cfg.counter.Get(), 10))
		h.Set("x-metric-gauge", strconv.FormatUint(m.cfg.gauge.Get(), 10))
	}
	if v, _ := h.Get("x-test-mode"); v == "async" {
		dec := m.cb.DecoderFilterCallbacks()
		go func() {
			defer dec.RecoverPanic()
			work()
			dec.Continue(api.Continue)
		}()
		return api.Running
	}
	work()
	return api.Continue
}
