package filtermanager_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/filtermanager"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// The fuzzed chain is made of these plugin kinds, registered once; what
// each hook does is read from the fuzz input per request.
var fzKinds = []struct {
	name  string
	needs api.Needs
	make  func(*fzFilter) any
}{
	{"fz-sync", api.Needs{}, func(f *fzFilter) any { return fzFull{f} }},
	{"fz-before", api.Needs{Phase: api.BeforeRoute}, func(f *fzFilter) any { return fzRecvDestroy{f} }},
	{"fz-block", api.Needs{MayBlock: api.BlockReceive | api.BlockSend}, func(f *fzFilter) any { return fzFull{f} }},
	{"fz-whole", api.Needs{RequestBody: api.WholeBody, ResponseBody: api.WholeBody}, func(f *fzFilter) any { return fzFull{f} }},
	{"fz-stream", api.Needs{RequestBody: api.StreamingBody, ResponseBody: api.StreamingBody}, func(f *fzFilter) any { return fzStream{fzFull{f}} }},
	{"fz-whole-block", api.Needs{RequestBody: api.WholeBody, MayBlock: api.BlockReceive, MaxRequestBody: 64}, func(f *fzFilter) any { return fzFull{f} }},
}

const fzSecret = "fz-secret-panic-text"

// fzRun is the request being fuzzed: what the plugins do, what they did.
type fzRun struct {
	mu       sync.Mutex
	actions  map[string][]byte // plugin -> one action per hook call, cycled
	values   []string
	filters  []*fzFilter
	panicked bool   // a request or response hook panicked
	after    string // a hook that ran after the panic
	replied  []int  // codes of the local replies plugins sent
	stray    sync.WaitGroup
}

var fzCurrent atomic.Pointer[fzRun]

type fzFilter struct {
	run      *fzRun
	name     string
	calls    int
	logs     atomic.Int32
	destroys atomic.Int32
}

// act runs the next action of this plugin for one hook.
func (f *fzFilter) act(ctx api.Context, hook string, h api.HeaderMap, body api.Buffer) api.Status {
	r := f.run
	r.mu.Lock()
	if r.panicked && r.after == "" {
		r.after = f.name + "." + hook
	}
	acts := r.actions[f.name]
	a := byte(0)
	if len(acts) > 0 {
		a = acts[f.calls%len(acts)]
	}
	f.calls++
	val := ""
	if len(r.values) > 0 {
		val = r.values[f.calls%len(r.values)]
	}
	r.mu.Unlock()
	switch a % 12 {
	case 1:
		code := 400 + int(a/12)%100
		r.mu.Lock()
		r.replied = append(r.replied, code)
		r.mu.Unlock()
		return ctx.Reply(code, "denied by "+f.name, nil)
	case 2:
		if h != nil {
			_ = h.Set("x-fz-"+hook, val)
		}
	case 3:
		if h != nil {
			_ = h.Del("x-a")
			_ = h.Add("x-b", val)
		}
	case 4:
		r.mu.Lock()
		r.panicked = true
		r.mu.Unlock()
		panic(fzSecret)
	case 5:
		ctx.SetState("fz", val)
		if v, ok := ctx.GetState("fz"); !ok || v != val {
			panic(fmt.Sprintf("state %v, want %q", v, val))
		}
		ctx.SetConsumer(&api.Consumer{Name: "c-" + val})
		ctx.Decide(true, "fz")
	case 6:
		// A stray goroutine that outlives the hook and keeps using the stream:
		// its calls must fail cleanly (typed errors or recovered panics).
		r.stray.Add(1)
		api.Go(ctx, func() {
			defer r.stray.Done()
			time.Sleep(200 * time.Microsecond)
			if h != nil {
				_ = h.Set("x-late", "1")
				_, _ = h.Get("x-a")
			}
			if body != nil {
				_ = body.AppendString("late")
			}
			_ = ctx.Receiver().GetRequestHeaders()
			_ = ctx.Reply(599, "late reply", nil)
		})
	case 7:
		if body != nil {
			_ = body.AppendString(val)
		}
	case 8:
		_ = ctx.Receiver().ClearRouteCache()
	case 9:
		if strings.HasPrefix(f.name, "fz-block") || strings.HasSuffix(f.name, "-block") {
			time.Sleep(100 * time.Microsecond)
		}
	case 10:
		if body != nil {
			_ = body.SetString(val)
		}
	case 11:
		if hook == "recv" {
			_ = ctx.Receiver().SetUpstreamOverrideHost("127.0.0.1:8080", false)
		}
	}
	return api.Continue
}

type fzRecvDestroy struct{ f *fzFilter }

func (x fzRecvDestroy) OnReceive(ctx api.Context, h api.RequestHeaderMap, b api.Buffer, _ api.HeaderMap) api.Status {
	if st := x.f.act(ctx, "recv", h, b); st != api.Continue {
		return st
	}
	if x.f.calls%3 == 0 {
		_ = h.SetPath(h.Path() + "x")
	}
	return api.Continue
}
func (x fzRecvDestroy) OnDestroy() { x.f.destroys.Add(1) }

type fzFull struct{ f *fzFilter }

func (x fzFull) OnReceive(ctx api.Context, h api.RequestHeaderMap, b api.Buffer, _ api.HeaderMap) api.Status {
	return x.f.act(ctx, "recv", h, b)
}
func (x fzFull) Append(ctx api.Context, h api.ResponseHeaderMap, b api.Buffer, _ api.HeaderMap) api.Status {
	return x.f.act(ctx, "send", h, b)
}
func (x fzFull) Log(api.Context, api.RequestHeaderMap, api.ResponseHeaderMap, api.RequestInfo) {
	x.f.logs.Add(1)
}
func (x fzFull) OnDestroy() { x.f.destroys.Add(1) }

type fzStream struct{ fzFull }

func (x fzStream) OnReceiveData(ctx api.Context, chunk api.Buffer, end bool) api.Status {
	return x.f.act(ctx, "recvdata", nil, chunk)
}
func (x fzStream) AppendData(ctx api.Context, chunk api.Buffer, end bool) api.Status {
	return x.f.act(ctx, "senddata", nil, chunk)
}

var fzRegister sync.Once

func fzPlugins() {
	fzRegister.Do(func() {
		for _, k := range fzKinds {
			k := k
			registry.Register(registry.Plugin{Name: k.name, Needs: k.needs, Factory: func(any) api.Filter {
				f := &fzFilter{name: k.name}
				r := fzCurrent.Load()
				if r == nil {
					r = &fzRun{} // the registry's contract probes
				}
				f.run = r
				r.mu.Lock()
				r.filters = append(r.filters, f)
				r.mu.Unlock()
				return k.make(f)
			}})
		}
	})
}

// fzInput reads the fuzz input: bytes, then default zeros.
type fzInput struct {
	b []byte
	i int
}

func (in *fzInput) byte() byte {
	if in.i >= len(in.b) {
		return 0
	}
	in.i++
	return in.b[in.i-1]
}
func (in *fzInput) n(max int) int { return int(in.byte()) % (max + 1) }
func (in *fzInput) str(max int) string {
	n := in.n(max)
	var sb strings.Builder
	for i := 0; i < n; i++ {
		sb.WriteByte(in.byte())
	}
	return sb.String()
}
func (in *fzInput) pairs(max int, names ...string) [][2]string {
	var out [][2]string
	for i, n := 0, in.n(max); i < n; i++ {
		out = append(out, [2]string{names[in.n(len(names)-1)], in.str(12)})
	}
	return out
}
func (in *fzInput) chunks(max int) []string {
	var out []string
	for i, n := 0, in.n(max); i < n; i++ {
		out = append(out, in.str(40))
	}
	return out
}

var fzChains sync.Map // chain JSON -> parsed config

// FuzzChain: the filter manager with a fuzzed chain (any order of plugins
// that are sync, BeforeRoute, blocking, whole-body, streaming) on fuzzed
// requests and responses through the fake Envoy: headers, bodies in chunks,
// trailers, client aborts in any phase; each plugin hook continues,
// replies, changes headers or bodies, sets state and consumers, clears the
// route, panics, or leaves a goroutine that keeps using the stream. Always:
// no SDK violation (now or from a late goroutine), no panic escaping, Log
// and OnDestroy exactly once per created filter, no plugin hook after a
// panic, a panic answered 500 without its text, a status unless aborted.
func FuzzChain(f *testing.F) {
	fzPlugins()
	for _, s := range []string{
		"\x3f\x00\x01\x05/path\x01\x00\x03abc\x02\x02ab\x02cd\x00\x00\x01\x00\x01\x02ok\x00\x09",
		"\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x09\x02\x01\x00",
		"\x3f\x01\x01\x01/\x00\x01\x05hello\x01\x00\x01x\x02\x00\x00\x09\x01\x04\x01\x04\x01\x04\x01\x04\x01\x04\x01\x04",
		"\x3f\x02\x01\x00\x02\x00\x02aa\x02bb\x00\x03\x02\x02\x02xy\x00\x00\x09\x02\x06\x07\x02\x06\x07\x02\x06\x07\x02\x06\x07\x02\x06\x07\x02\x06\x07",
		"\x3f\x00\x03\x00\x00\x01\x05hello\x00\x00\x00\x00\x05\x09\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01",
		"\x10\x00\x01\x00\x00\x01\x70" + strings.Repeat("b", 112) + "\x00\x00\x00\x00\x09\x01\x07\x01\x07\x01\x07\x01\x07\x01\x07\x01\x07",
		"\x3f\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x09\x02\x08\x0b\x02\x08\x0b\x02\x08\x0b\x02\x08\x0b\x02\x08\x0b\x02\x08\x0b",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 2048 {
			t.Skip()
		}
		in := &fzInput{b: data}
		mask, rot := in.byte(), in.n(len(fzKinds)-1)
		var names []string
		for i := range fzKinds {
			k := fzKinds[(i+rot)%len(fzKinds)]
			if mask&(1<<((i+rot)%len(fzKinds))) != 0 {
				names = append(names, k.name)
			}
		}
		req := fakeenvoy.Request{
			Method:   []string{"GET", "POST", "HEAD", "PUT"}[in.n(3)],
			Path:     "/" + in.str(16),
			Headers:  in.pairs(3, "x-a", "x-b", "cookie", "content-type"),
			Body:     in.chunks(3),
			Trailers: in.pairs(2, "x-t", "grpc-status"),
			Timeout:  2 * time.Second,
		}
		resp := fakeenvoy.Response{
			Status:   []int{200, 204, 304, 404, 500, 503}[in.n(5)],
			Headers:  in.pairs(2, "x-r", "content-type"),
			Body:     in.chunks(3),
			Trailers: in.pairs(2, "x-rt"),
		}
		req.Upstream = func(*fakeenvoy.Upstream) fakeenvoy.Response { return resp }
		if p := in.n(9); p <= int(fakeenvoy.EncodeTrailers) {
			req.AbortAt = fakeenvoy.Phase(p)
		}
		run := &fzRun{actions: map[string][]byte{}}
		for _, n := range names {
			run.actions[n] = []byte(in.str(8))
		}
		for i := 0; i < 3; i++ {
			run.values = append(run.values, in.str(8))
		}
		chain := chainJSON(names...)
		cfg, ok := fzChains.Load(chain)
		if !ok {
			var err error
			if cfg, err = fakeenvoy.ParseFilter(filtermanager.Parser{}, chain); err != nil {
				t.Fatalf("chain %s: %v", chain, err)
			}
			fzChains.Store(chain, cfg)
		}
		fzCurrent.Store(run)
		res := fakeenvoy.Do(filtermanager.Factory, cfg, req)
		waited := make(chan struct{})
		go func() { run.stray.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			t.Fatalf("a plugin goroutine did not finish")
		}
		fzCurrent.Store(nil)
		late, _ := res.Late()
		if len(res.Violations) > 0 || len(late) > 0 {
			t.Fatalf("chain %v: SDK violations %q (late %q)", names, res.Violations, late)
		}
		if !res.Destroyed {
			t.Fatalf("chain %v: the stream was not destroyed", names)
		}
		run.mu.Lock()
		defer run.mu.Unlock()
		for _, fl := range run.filters {
			if d := fl.destroys.Load(); d != 1 {
				t.Fatalf("chain %v: %s destroyed %d times", names, fl.name, d)
			}
			if l := fl.logs.Load(); l != 1 && fl.name != "fz-before" {
				t.Fatalf("chain %v: %s logged %d times", names, fl.name, l)
			}
		}
		if run.after != "" {
			t.Fatalf("chain %v: %s ran after a panic", names, run.after)
		}
		if strings.Contains(res.Body, fzSecret) || (res.LocalReply != nil && strings.Contains(res.LocalReply.Details+res.LocalReply.Body, fzSecret)) {
			t.Fatalf("chain %v: the panic text reached the client: %q %+v", names, res.Body, res.LocalReply)
		}
		if testing.Verbose() {
			t.Logf("chain %v: status %d statuses %v aborted %v panicked %v replied %v", names, res.Status, res.Statuses, res.Aborted, run.panicked, run.replied)
		}
		if res.Aborted {
			return
		}
		if res.Status == 0 {
			t.Fatalf("chain %v: no status (statuses %v)", names, res.Statuses)
		}
		if run.panicked && res.Status != 500 {
			t.Fatalf("chain %v: a plugin panicked, status %d (statuses %v)", names, res.Status, res.Statuses)
		}
	})
}
