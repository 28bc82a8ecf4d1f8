// Package testplugins holds the plugins of the end-to-end tests (registered as
// e2e-*). They exercise the framework through moe-host: mixed sync/async
// phases, whole-body and header-only plugins together, panics in every phase,
// goroutines that outlive their request, and client aborts. They count what
// happened in process-global counters that the e2e-stats plugin serves on
// GET /e2e/stats, so a test can see inside the host process.
package testplugins

import (
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/variables"
)

// counters are global on purpose: the test reads them through HTTP.
var (
	mu       sync.Mutex
	counters = map[string]int{}
)

func count(name string) {
	mu.Lock()
	counters[name]++
	mu.Unlock()
}

// Snapshot returns the counters (also served as JSON on /e2e/stats).
func Snapshot() map[string]int {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[string]int, len(counters))
	for k, v := range counters {
		out[k] = v
	}
	return out
}

func appendHeader(h api.HeaderMap, k, v string) {
	if old, ok := h.Get(k); ok && old != "" {
		v = old + "," + v
	}
	_ = h.Set(k, v)
}

// TraceConfig is the config of e2e-sync and e2e-async.
type TraceConfig struct {
	Tag string `json:"tag"`
	// Vars, when set, is rendered into the request header x-e2e-vars.
	Vars *variables.Template `json:"vars"`
}

func (c *TraceConfig) Validate() error {
	if c.Tag == "" || strings.ContainsAny(c.Tag, ",: ") {
		return api.FieldErrorf("tag", "must be a non-empty word, got %q", c.Tag)
	}
	return nil
}

// tracer appends its tag to x-e2e-trace on both paths, can deny, panic on
// demand, and counts its log and destroy hooks.
type tracer struct {
	cfg   *TraceConfig
	async bool
}

func (t *tracer) maybePanic(h api.HeaderMap, phase string) {
	if v, _ := h.Get("x-e2e-panic"); v == t.cfg.Tag+":"+phase {
		panic("e2e secret panic text " + v)
	}
}

func (t *tracer) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	count("receive:" + t.cfg.Tag)
	t.maybePanic(h, "receive")
	if v, _ := h.Get("x-e2e-deny"); v == t.cfg.Tag {
		ctx.Receiver().SendHijackReplyWithBody(403, api.NewHeaders("x-e2e-denied-by", t.cfg.Tag), "denied by "+t.cfg.Tag)
		return api.Stop
	}
	if t.async {
		sleep := time.Millisecond
		if v, ok := h.Get("x-e2e-sleep"); ok {
			if ms, err := strconv.Atoi(v); err == nil {
				sleep = time.Duration(ms) * time.Millisecond
			}
		}
		select {
		case <-time.After(sleep):
		case <-ctx.Done():
			count("ctxdone:" + t.cfg.Tag)
			return api.Continue
		}
		if _, ok := h.Get("x-e2e-stray"); ok {
			t.stray(ctx, h)
		}
	}
	if t.cfg.Vars != nil {
		h.Set("x-e2e-vars", t.cfg.Vars.Render(ctx))
	}
	appendHeader(h, "x-e2e-trace", t.cfg.Tag)
	return api.Continue
}

// stray starts a goroutine that keeps using the request for 300ms after the
// phase, counting the typed errors it gets.
func (t *tracer) stray(ctx api.Context, h api.RequestHeaderMap) {
	api.Go(ctx, func() {
		end := time.Now().Add(300 * time.Millisecond)
		for time.Now().Before(end) {
			err := h.Set("x-stray", "1")
			switch {
			case err == nil:
				count("stray-ok")
			case errors.Is(err, api.ErrReleased):
				count("stray-released")
			case errors.Is(err, api.ErrDestroyed):
				count("stray-destroyed")
			case errors.Is(err, api.ErrReadOnly):
				count("stray-readonly")
			default:
				count("stray-untyped")
			}
			func() {
				defer func() {
					if r := recover(); r != nil && !api.IsStreamError(r) {
						count("stray-untyped-panic")
					}
				}()
				h.Get("x-e2e-stray")
				ctx.Receiver().Route().RouteName()
			}()
			time.Sleep(time.Millisecond)
		}
		count("stray-done")
	})
}

func (t *tracer) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	count("send:" + t.cfg.Tag)
	if req := ctx.Sender().GetRequestHeaders(); req != nil {
		t.maybePanic(req, "send")
	}
	if t.async {
		time.Sleep(time.Millisecond)
	}
	appendHeader(h, "x-e2e-trace", t.cfg.Tag)
	return api.Continue
}

func (t *tracer) Log(ctx api.Context, req api.RequestHeaderMap, _ api.ResponseHeaderMap, _ api.RequestInfo) {
	count("log:" + t.cfg.Tag)
	if req != nil {
		if v, _ := req.Get("x-e2e-panic"); v == t.cfg.Tag+":log" {
			panic("e2e secret panic text in log")
		}
	}
}

func (t *tracer) OnDestroy() { count("destroy:" + t.cfg.Tag) }

// BodyConfig is the config of e2e-body.
type BodyConfig struct {
	Upper bool `json:"upper"`
	// MaxBytes caps the buffered body (413 above).
	MaxBytes int `json:"max_bytes"`
}

func (c *BodyConfig) Validate() error {
	if c.MaxBytes < 0 {
		return api.FieldErrorf("max_bytes", "must be >= 0")
	}
	return nil
}

func (c *BodyConfig) Needs() api.Needs {
	return api.Needs{RequestBody: api.WholeBody, MaxRequestBody: c.MaxBytes}
}

type body struct{ cfg *BodyConfig }

func (b *body) OnReceive(ctx api.Context, h api.RequestHeaderMap, buf api.Buffer, _ api.HeaderMap) api.Status {
	count("receive:body")
	n := 0
	if buf != nil {
		n = buf.Len()
		if b.cfg.Upper {
			buf.SetString(strings.ToUpper(buf.String()))
		}
	}
	h.Set("x-e2e-body-len", strconv.Itoa(n))
	appendHeader(h, "x-e2e-trace", "body")
	return api.Continue
}

// PanicConfig is the config of e2e-panic.
type PanicConfig struct {
	Async bool `json:"async"`
}

func (c *PanicConfig) Needs() api.Needs {
	if c.Async {
		return api.Needs{MayBlock: api.BlockReceive | api.BlockSend}
	}
	return api.Needs{}
}

// panicker panics in the phase named by x-e2e-panic-phase.
type panicker struct{}

func phaseOf(h api.HeaderMap) string {
	if h == nil {
		return ""
	}
	v, _ := h.Get("x-e2e-panic-phase")
	return v
}

func (panicker) OnReceive(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if phaseOf(h) == "receive" {
		panic("e2e secret panic text")
	}
	return api.Continue
}

func (panicker) Append(ctx api.Context, _ api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if phaseOf(ctx.Sender().GetRequestHeaders()) == "send" {
		panic("e2e secret panic text")
	}
	return api.Continue
}

func (panicker) Log(_ api.Context, req api.RequestHeaderMap, _ api.ResponseHeaderMap, _ api.RequestInfo) {
	if phaseOf(req) == "log" {
		panic("e2e secret panic text")
	}
}

// stats answers GET /e2e/stats with the counters.
type stats struct{}

func (stats) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if h.Path() != "/e2e/stats" {
		return api.Continue
	}
	snap := Snapshot()
	keys := make([]string, 0, len(snap))
	for k := range snap {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b, _ := json.Marshal(snap)
	ctx.Receiver().SendHijackReplyWithBody(200, api.NewHeaders("content-type", "application/json"), string(b))
	return api.Stop
}

func init() {
	registry.Register(registry.Plugin{
		Name:        "e2e-sync",
		Description: "e2e: traces, denies and panics on demand, synchronously",
		NewConfig:   func() any { return &TraceConfig{Tag: "sync"} },
		Factory:     registry.Typed(func(c *TraceConfig) api.Filter { return &tracer{cfg: c} }),
	})
	registry.Register(registry.Plugin{
		Name:        "e2e-async",
		Description: "e2e: like e2e-sync but its phases block (goroutine + Continue)",
		NewConfig:   func() any { return &TraceConfig{Tag: "async"} },
		Factory:     registry.Typed(func(c *TraceConfig) api.Filter { return &tracer{cfg: c, async: true} }),
		Needs:       api.Needs{MayBlock: api.BlockReceive | api.BlockSend},
	})
	registry.Register(registry.Plugin{
		Name:        "e2e-body",
		Description: "e2e: needs the whole request body",
		NewConfig:   func() any { return &BodyConfig{} },
		Factory:     registry.Typed(func(c *BodyConfig) api.Filter { return &body{cfg: c} }),
		Needs:       api.Needs{RequestBody: api.WholeBody},
	})
	registry.Register(registry.Plugin{
		Name:        "e2e-panic",
		Description: "e2e: panics in the phase named by x-e2e-panic-phase",
		NewConfig:   func() any { return &PanicConfig{} },
		Factory:     func(any) api.Filter { return panicker{} },
	})
	registry.Register(registry.Plugin{
		Name:        "e2e-stats",
		Description: "e2e: serves the e2e counters on /e2e/stats",
		Factory:     func(any) api.Filter { return stats{} },
		Needs:       api.Needs{Phase: api.BeforeRoute},
	})
}
