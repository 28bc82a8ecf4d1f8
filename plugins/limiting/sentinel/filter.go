package sentinel

import (
	"errors"
	"sync"

	"github.com/alibaba/sentinel-golang/core/base"

	"github.com/moeproxy/moe/shared/api"
)

// errResponse marks an exit with an error response for the circuit breakers.
var errResponse = errors.New("error response")

// filter is per request: it holds the request's sentinel entry until the
// response headers (or the end of the request) exit it.
type filter struct {
	rt *runtime

	// mu guards entry and done: with a throttling rule OnReceive runs in a
	// goroutine and may still be queued in sentinel when Envoy destroys the
	// request.
	mu    sync.Mutex
	entry *base.SentinelEntry
	done  bool // OnDestroy ran: an entry obtained later is exited at once
}

// maxKeyLen bounds rendered names and hot-spot values: they come from request
// headers and sentinel keeps them (as resources, or in the hot-spot LRU).
const maxKeyLen = 256

func truncate[S string | []byte](s S) S {
	if len(s) > maxKeyLen {
		return s[:maxKeyLen]
	}
	return s
}

// OnReceive asks sentinel for an entry; a blocked request gets the configured
// reply and a header naming the rule type.
func (f *filter) OnReceive(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	rt := f.rt
	var buf [128]byte
	res := rt.space.lookup(truncate(rt.resource.AppendTo(buf[:0], ctx)))
	sr := rt.space.rules.Load()
	kind := sr.entry
	if rt.pressureMatch != nil && rt.pressureMatch.Render(ctx) == rt.pressureValue {
		res = res.pressure
		if sr.pressureEntry != nil { // nil when a config without pressure_test took over the namespace
			kind = sr.pressureEntry
		}
	}
	var args []any
	if hotKeys := sr.hotKeys; len(hotKeys) > 0 {
		args = make([]any, len(hotKeys))
		for i, t := range hotKeys {
			if v := t.Render(ctx); v != "" {
				args[i] = truncate(v) // empty keys are not limited (nil args are skipped)
			}
		}
	}
	e, blk := kind.enter(res, args)
	if blk != nil {
		r := reasonOf(blk.BlockType())
		inc(res.blocked[r])
		return ctx.Reply(rt.replyStatus[r], rt.replyBody[r], rt.replyHeader[r])
	}
	inc(res.passed)
	rt.inflight.Add(1)
	f.mu.Lock()
	if f.done {
		f.mu.Unlock()
		f.exit(e, nil)
		return api.Continue
	}
	f.entry = e
	f.mu.Unlock()
	return api.Continue
}

// Append exits the entry on the response headers: the status (errors) and the
// time since the entry (response time) feed the circuit breakers. Without
// breakers the status is not read: that saves copying the response headers.
func (f *filter) Append(_ api.Context, headers api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	e := f.take(false)
	if e == nil {
		return api.Continue
	}
	var err error
	if f.rt.space.rules.Load().breakers && f.rt.isError(headers.Status()) {
		err = errResponse
	}
	f.exit(e, err)
	return api.Continue
}

// OnDestroy exits an entry that no response exited (client abort, reset).
func (f *filter) OnDestroy() {
	if e := f.take(true); e != nil {
		f.exit(e, nil)
	}
}

// take hands the entry to exactly one caller.
func (f *filter) take(destroy bool) *base.SentinelEntry {
	f.mu.Lock()
	e := f.entry
	f.entry = nil
	if destroy {
		f.done = true
	}
	f.mu.Unlock()
	return e
}

// exit must run exactly once per entry: sentinel recycles the entry's context,
// so a second Exit with an error would write into another request's context.
func (f *filter) exit(e *base.SentinelEntry, err error) {
	if err != nil {
		e.Exit(base.WithError(err))
	} else {
		e.Exit()
	}
	f.rt.inflight.Add(-1)
}
