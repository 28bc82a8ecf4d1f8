package filtermanager_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/testing/tb"
)

func TestPanicInAnyPhaseEndsOnlyThatRequestWith500(t *testing.T) {
	type where struct {
		name  string
		needs api.Needs
		// f panics in the phase under test.
		f func(secret string) any
		// replies: the client gets the 500 (false: too late, response already sent).
		replies bool
	}
	recvPanic := func(secret string) any {
		return recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status { panic(secret) }}
	}
	sendPanic := func(secret string) any {
		return sendF{func(api.Context, api.ResponseHeaderMap, api.Buffer, api.HeaderMap) api.Status { panic(secret) }}
	}
	cases := []where{
		{"receive sync", api.Needs{}, recvPanic, true},
		{"receive async", api.Needs{MayBlock: api.BlockReceive}, recvPanic, true},
		{"receive whole body", api.Needs{RequestBody: api.WholeBody}, recvPanic, true},
		{"receive whole body async", api.Needs{RequestBody: api.WholeBody, MayBlock: api.BlockReceive}, recvPanic, true},
		{"send sync", api.Needs{}, sendPanic, true},
		{"send async", api.Needs{MayBlock: api.BlockSend}, sendPanic, true},
		{"send whole body", api.Needs{ResponseBody: api.WholeBody}, sendPanic, true},
		{"receive data", api.Needs{RequestBody: api.StreamingBody}, func(secret string) any {
			return dataF{recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status { return api.Continue }},
				func(api.Context, api.Buffer, bool) api.Status { panic(secret) }}
		}, true},
		{"access log", api.Needs{}, func(secret string) any {
			return logF{func(api.Context, api.RequestHeaderMap, api.ResponseHeaderMap, api.RequestInfo) { panic(secret) }}
		}, false},
		{"destroy", api.Needs{}, func(secret string) any { return destroyF{func() { panic(secret) }} }, false},
		{"factory", api.Needs{}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logMark := fakeenvoy.MarkLogs()
			secret := fmt.Sprintf("secret-%d-%s", seq.Add(1), strings.ReplaceAll(tc.name, " ", "-"))
			var f any
			if tc.f != nil {
				f = tc.f(secret)
			} else {
				// The factory itself panics on the request, not in the two contract
				// probes (at registration and when the config is parsed).
				var n atomic.Int32
				f = func() any {
					if n.Add(1) > 2 {
						panic(secret)
					}
					return recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status { return api.Continue }}
				}
			}
			p := plugin(t, tc.needs, f)
			before := fakeenvoy.Stats.Counter(metrics.Prefix(p) + "panics_total")
			total := fakeenvoy.Stats.Counter("moe_panics_total")
			res := do(t, mustChain(t, p), fakeenvoy.Request{Method: "POST", Body: []string{"x"}})
			if tc.replies {
				if res.Status != 500 || !strings.Contains(res.Body, p) || strings.Contains(res.Body, secret) {
					t.Errorf("status %d body %q: want 500 naming %s without the panic text", res.Status, res.Body, p)
				}
				if res.LocalReply == nil || !strings.Contains(res.LocalReply.Details, p) || strings.Contains(res.LocalReply.Details, secret) {
					t.Errorf("details %+v", res.LocalReply)
				}
			} else if res.Status != 200 {
				t.Errorf("status %d, want 200 (panic after the response)", res.Status)
			}
			if got := fakeenvoy.Stats.Counter(metrics.Prefix(p) + "panics_total"); got != before+1 {
				t.Errorf("plugin panic metric %d -> %d", before, got)
			}
			if got := fakeenvoy.Stats.Counter("moe_panics_total"); got <= total {
				t.Errorf("moe_panics_total did not grow")
			}
			if lines := fakeenvoy.LogsSince(logMark, secret); len(lines) != 1 || !strings.Contains(lines[0], "goroutine") {
				t.Errorf("want one log line with the stack, got %d", len(lines))
			}
			// The next request through the same config works.
			other := plugin(t, api.Needs{}, tracer("ok"))
			if r2 := do(t, mustChain(t, other), fakeenvoy.Request{}); r2.Status != 200 {
				t.Errorf("next request: %d", r2.Status)
			}
		})
	}
}

func TestLogAndDestroyRunExactlyOncePerPlugin(t *testing.T) {
	cases := []struct {
		name string
		recv recvFn
		req  fakeenvoy.Request
	}{
		{"normal", nil, fakeenvoy.Request{}},
		{"local reply", func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			ctx.Receiver().SendHijackReply(401, nil)
			return api.Stop
		}, fakeenvoy.Request{}},
		{"panic", func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status { panic("boom") }, fakeenvoy.Request{}},
		{"client abort while async", func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			<-ctx.Done()
			return api.Continue
		}, fakeenvoy.Request{AbortAt: fakeenvoy.DecodeHeaders}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs, destroys atomic.Int32
			mk := func(r recvFn) fullF {
				if r == nil {
					r = func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status { return api.Continue }
				}
				return fullF{
					recvF{r},
					sendF{func(api.Context, api.ResponseHeaderMap, api.Buffer, api.HeaderMap) api.Status { return api.Continue }},
					logF{func(api.Context, api.RequestHeaderMap, api.ResponseHeaderMap, api.RequestInfo) { logs.Add(1) }},
					destroyF{func() { destroys.Add(1) }},
				}
			}
			a := plugin(t, api.Needs{}, mk(nil))
			b := plugin(t, api.Needs{MayBlock: api.BlockReceive}, mk(tc.recv))
			c := plugin(t, api.Needs{}, mk(nil))
			do(t, mustChain(t, a, b, c), tc.req)
			tb.Poll(2*time.Second, func() bool { return destroys.Load() >= 3 })
			time.Sleep(10 * time.Millisecond)
			if logs.Load() != 3 || destroys.Load() != 3 {
				t.Errorf("log hooks %d, destroy hooks %d, want 3 and 3", logs.Load(), destroys.Load())
			}
		})
	}
}

// Goroutines that keep using a request after its phase ended get typed errors
// (or *StreamError panics for methods without an error), never reach the SDK,
// and do not race: run with -race.
func TestStrayGoroutinesGetTypedErrors(t *testing.T) {
	const workers = 16
	var wg sync.WaitGroup
	var released, destroyed, other atomic.Int32
	classify := func(err error) {
		switch {
		case err == nil:
		case errors.Is(err, api.ErrReleased):
			released.Add(1)
		case errors.Is(err, api.ErrDestroyed):
			destroyed.Add(1)
		default:
			var se *api.StreamError
			if !errors.As(err, &se) {
				t.Errorf("untyped error %v", err)
			}
			other.Add(1)
		}
	}
	stop := make(chan struct{})
	hammer := func(ctx api.Context, h api.RequestHeaderMap, body api.Buffer, gate chan struct{}) {
		defer wg.Done()
		// Stray from here on: the decode phase that started us has ended.
		<-gate
		for i := 0; ; i++ {
			func() {
				defer func() {
					if r := recover(); r != nil {
						if !api.IsStreamError(r) {
							t.Errorf("non-typed panic %v", r)
						}
						classify(r.(error))
					}
				}()
				classify(h.Set("x-stray", "v"))
				h.Get("x-a")
				classify(h.Del("x-a"))
				if body != nil {
					classify(body.AppendString("!"))
					body.Len()
				}
				rh := ctx.Receiver()
				classify(rh.SendHijackReply(418, nil))
				classify(rh.SetRequestHeaders(api.NewHeaders("x", "y")))
				rh.GetRequestHeaders()
				rh.Route().RouteName()
				ctx.SetState("k", i)
				ctx.GetState("k")
				ctx.Log().Debugf("stray %d", i)
			}()
			select {
			case <-stop:
				return
			default:
			}
			if i > 50 {
				select {
				case <-ctx.Done():
					// Keep going a little after the end of the request.
					if i > 200 {
						return
					}
				default:
				}
			}
		}
	}
	p := plugin(t, api.Needs{RequestBody: api.WholeBody}, recvF{func(ctx api.Context, h api.RequestHeaderMap, b api.Buffer, _ api.HeaderMap) api.Status {
		gate := make(chan struct{})
		ctx.SetState("gate", gate)
		for i := 0; i < workers; i++ {
			wg.Add(1)
			api.Go(ctx, func() { hammer(ctx, h, b, gate) })
		}
		return api.Continue
	}})
	s := plugin(t, api.Needs{MayBlock: api.BlockSend}, sendF{func(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		g, _ := ctx.GetState("gate")
		close(g.(chan struct{}))
		time.Sleep(2 * time.Millisecond) // let the strays run during this phase too
		h.Set("x-send", "1")
		return api.Continue
	}})
	cfg := mustChain(t, s, p)
	for i := 0; i < 5; i++ {
		res := do(t, cfg, fakeenvoy.Request{Method: "POST", Body: []string{"b"}, Headers: [][2]string{{"x-a", "1"}}})
		if res.Status != 200 {
			t.Fatalf("status %d", res.Status)
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		close(stop)
		t.Fatal("stray goroutines did not finish")
	}
	if destroyed.Load() == 0 {
		t.Errorf("no goroutine observed ErrDestroyed (released %d other %d)", released.Load(), other.Load())
	}
	t.Logf("typed errors: released %d destroyed %d other %d", released.Load(), destroyed.Load(), other.Load())
}

func TestGoroutineOutlivingRequestFailsCleanly(t *testing.T) {
	var kept api.RequestHeaderMap
	var keptCtx api.Context
	p := plugin(t, api.Needs{}, recvF{func(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		kept, keptCtx = h, ctx
		return api.Continue
	}})
	res := do(t, mustChain(t, p), fakeenvoy.Request{})
	if !res.Destroyed {
		t.Fatal("not destroyed")
	}
	errc := make(chan error, 1)
	go func() {
		defer func() {
			r := recover()
			err, _ := r.(error)
			errc <- err
		}()
		if err := kept.Set("x", "1"); !errors.Is(err, api.ErrDestroyed) {
			errc <- err
			return
		}
		if keptCtx.Err() == nil {
			errc <- errors.New("ctx.Err() nil after the request ended")
			return
		}
		<-keptCtx.Done()
		kept.Get("x") // panics with *StreamError
	}()
	if err := <-errc; !errors.Is(err, api.ErrDestroyed) {
		t.Errorf("got %v, want ErrDestroyed", err)
	}
}

func TestClientAbortDuringAsyncPhase(t *testing.T) {
	var sawDone atomic.Bool
	finished := make(chan struct{})
	p := plugin(t, api.Needs{MayBlock: api.BlockReceive}, recvF{func(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		defer close(finished)
		select {
		case <-ctx.Done():
			sawDone.Store(true)
		case <-time.After(3 * time.Second):
		}
		if err := h.Set("x-late", "1"); !errors.Is(err, api.ErrDestroyed) {
			t.Errorf("late write: %v", err)
		}
		return api.Continue
	}})
	res := do(t, mustChain(t, p), fakeenvoy.Request{AbortAt: fakeenvoy.DecodeHeaders})
	<-finished
	time.Sleep(20 * time.Millisecond) // the chain goroutine must not Continue a destroyed stream
	if !res.Aborted || !sawDone.Load() || res.Upstream != nil {
		t.Errorf("aborted %v done %v upstream %v", res.Aborted, sawDone.Load(), res.Upstream)
	}
	if v, c := res.Late(); c != 0 || len(v) > 0 {
		t.Errorf("after the abort: %d Continue calls, violations %q", c, v)
	}
}

// Many requests at once through one chain (as Envoy's workers do): the chain,
// plugin configs and metrics are shared and must stay race free.
func TestConcurrentRequestsShareTheChainSafely(t *testing.T) {
	a := plugin(t, api.Needs{}, tracer("a"))
	b := plugin(t, api.Needs{MayBlock: api.BlockReceive | api.BlockSend, RequestBody: api.WholeBody}, bothF{
		recvF{func(ctx api.Context, h api.RequestHeaderMap, body api.Buffer, _ api.HeaderMap) api.Status {
			ctx.SetState("n", body.Len())
			appendHeader(h, "x-trace", "b")
			return api.Continue
		}},
		sendF{func(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			n, _ := ctx.GetState("n")
			h.Set("x-n", fmt.Sprint(n))
			return api.Continue
		}},
	})
	cfg := mustChain(t, a, b)
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := strings.Repeat("x", i)
			res := do(t, cfg, fakeenvoy.Request{Method: "POST", Body: []string{body, "!"}})
			if res.Status != 200 || res.Headers["x-n"][0] != fmt.Sprint(i+1) || res.Upstream.Headers["x-trace"][0] != "a,b" {
				t.Errorf("request %d: %d %v", i, res.Status, res.Headers)
			}
		}(i)
	}
	wg.Wait()
}

// A log or destroy hook that panics is counted and skipped: the hooks of the
// plugins after it still run, each exactly once.
func TestPanickingLogOrDestroyHookDoesNotSkipTheOthers(t *testing.T) {
	var logs, destroys atomic.Int32
	boomLog := plugin(t, api.Needs{}, logF{func(api.Context, api.RequestHeaderMap, api.ResponseHeaderMap, api.RequestInfo) { panic("log boom") }})
	okLog := plugin(t, api.Needs{}, logF{func(api.Context, api.RequestHeaderMap, api.ResponseHeaderMap, api.RequestInfo) { logs.Add(1) }})
	boomDestroy := plugin(t, api.Needs{}, destroyF{func() { panic("destroy boom") }})
	okDestroy := plugin(t, api.Needs{}, destroyF{func() { destroys.Add(1) }})
	total := fakeenvoy.Stats.Counter("moe_panics_total")
	res := do(t, mustChain(t, boomLog, okLog, boomDestroy, okDestroy), fakeenvoy.Request{})
	if res.Status != 200 {
		t.Fatalf("status %d", res.Status)
	}
	if logs.Load() != 1 || destroys.Load() != 1 {
		t.Errorf("later hooks ran %d log, %d destroy times; want 1 each", logs.Load(), destroys.Load())
	}
	if got := fakeenvoy.Stats.Counter("moe_panics_total") - total; got != 2 {
		t.Errorf("%d panics counted, want 2", got)
	}
}
