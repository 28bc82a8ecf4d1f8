package fakeframework

import (
	"bytes"
	"errors"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// Check is Parse in check-only mode (Env.Checking: Init runs as for moectl validate, see
// api.ConfigEnv.CheckOnly). The framework destroys such a config right after Init; Check
// leaves that to the test, so that it can first look at what Init did (or did not) start.
func Check[C Config](t testing.TB, plugin string, newConfig func() any, js string, route bool) (C, *Env, error) {
	t.Helper()
	return parse[C](plugin, newConfig, js, route, true)
}

// Destroy destroys cfg when it is an api.Destroyable (a zero or nil config too, as the
// framework may).
func Destroy(cfg any) {
	if d, ok := cfg.(api.Destroyable); ok {
		d.Destroy()
	}
}

// WantCheckError is WantConfigError in check-only mode: the registered plugin's config
// goes through config.CheckPluginFull (strict decode, Validate, Init with CheckOnly,
// destroyed), which must give a *config.Error naming plugin, field and a reason containing
// reason: the errors Init reports for real it reports when it only checks.
func WantCheckError(t testing.TB, plugin, raw, field, reason string) {
	t.Helper()
	p, ok := registry.Get(plugin)
	if !ok {
		t.Fatalf("no plugin %q", plugin)
	}
	err := config.CheckPluginFull(p, []byte(raw), false)
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *config.Error, got %v", err)
	}
	if ce.Plugin != plugin || ce.Field != field || !strings.Contains(ce.Reason, reason) {
		t.Fatalf("got plugin=%q field=%q reason=%q; want %q %q ~%q", ce.Plugin, ce.Field, ce.Reason, plugin, field, reason)
	}
}

// StartsNoGoroutine runs fn (typically an Init in check-only mode, before its Destroy) and
// fails the test when a goroutine that did not run before still runs a second later, naming
// it. The framework's own once-per-process goroutines (processWide) do not count: whichever
// test first updates a metric starts them.
func StartsNoGoroutine(t testing.TB, fn func()) {
	t.Helper()
	before := goroutineIDs()
	fn()
	var fresh []string
	if tb.Poll(time.Second, func() bool { fresh = newGoroutines(before); return len(fresh) == 0 }) {
		return
	}
	t.Errorf("%d goroutine(s) started and still running:\n%s", len(fresh), strings.Join(fresh, "\n\n"))
}

// processWide are the stacks of goroutines shared/metrics starts once per process, on the first
// metric update (the flusher) and the first request (the runtime gauge sampler).
var processWide = []string{"shared/metrics.flushLoop(", "shared/metrics.runtimeSampler("}

// newGoroutines returns the stacks of the goroutines not in before, but for processWide ones.
func newGoroutines(before map[string]bool) []string {
	var fresh []string
	for id, stack := range goroutineStacks() {
		if before[id] || slices.ContainsFunc(processWide, func(f string) bool { return strings.Contains(stack, f) }) {
			continue
		}
		fresh = append(fresh, stack)
	}
	return fresh
}

// StartsGoroutine is the converse, for the test of a test: fn leaves at least one more
// goroutine running (the same Init, for real, starts its background work).
func StartsGoroutine(t testing.TB, fn func()) {
	t.Helper()
	n := runtime.NumGoroutine()
	fn()
	if m := runtime.NumGoroutine(); m <= n {
		t.Errorf("%d goroutine(s) before, %d after: nothing was started", n, m)
	}
}

// goroutineStacks maps each goroutine's header line ("goroutine 7 [running]:" up to the
// state) to its stack.
func goroutineStacks() map[string]string {
	buf := make([]byte, 1<<20)
	for i := 0; i < 6; i++ { // up to 64 MiB
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		id, _, _ := strings.Cut(string(g), " [")
		out[id] = string(g)
	}
	return out
}

func goroutineIDs() map[string]bool {
	ids := map[string]bool{}
	for id := range goroutineStacks() {
		ids[id] = true
	}
	return ids
}

// Listener is a loopback TCP listener that counts the connections made to it (and closes
// them at once): the JWKS, Redis or collector address of a config whose check-only Init
// must reach nothing.
type Listener struct {
	ln net.Listener
	n  atomic.Int64
}

// NewListener listens on 127.0.0.1 (a free port) until the test ends.
func NewListener(t testing.TB) *Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &Listener{ln: ln}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.n.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return l
}

// Addr is "127.0.0.1:port".
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Connections counts the connections accepted so far.
func (l *Listener) Connections() int64 { return l.n.Load() }

// WantNoConnection fails the test when anything connected, waiting d first for a dial
// from a goroutine that may have been started.
func (l *Listener) WantNoConnection(t testing.TB, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	if n := l.Connections(); n != 0 {
		t.Errorf("%d connection(s) to %s", n, l.Addr())
	}
}
