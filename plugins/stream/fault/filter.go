package fault

import (
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// filter is the config itself, seen as a filter: stateless per request.
type filter Config

// StateKey is the request state (and Envoy filter state moe.state.fault)
// naming the faults injected: "delay", "abort" or "delay,abort", for access
// logs (Envoy's response flags DI and FI).
const StateKey = "fault"

// OnReceive injects the faults a matching request draws. With a delay
// configured this runs in a goroutine (Needs declares MayBlock), so the wait
// never holds Envoy's worker thread.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	delay := f.delayOn && f.delayP.hit()
	abort := f.abortOn && f.abortP.hit()
	if !delay && !abort {
		return api.Continue
	}
	// Matching after the draw: most requests draw nothing and skip the match.
	if !f.Match.Matches(ctx, h) {
		return api.Continue
	}
	if n := f.active.Add(1); f.MaxActiveFaults > 0 && n > int64(f.MaxActiveFaults) {
		f.active.Add(-1)
		f.overflow.Inc(1)
		return api.Continue
	}
	f.activeGauge.Add(1)
	defer func() {
		f.active.Add(-1)
		f.activeGauge.Add(-1)
	}()
	switch {
	case delay && abort:
		ctx.SetState(StateKey, "delay,abort")
	case delay:
		ctx.SetState(StateKey, "delay")
	default:
		ctx.SetState(StateKey, "abort")
	}
	if delay {
		f.delays.Inc(1)
		t := time.NewTimer(f.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			// The client went away: nobody waits for this request any more.
			t.Stop()
			return api.Continue
		}
	}
	if abort {
		f.aborts.Inc(1)
		return ctx.Reply(f.Abort.Status, f.Abort.Body, f.abortHeaders)
	}
	return api.Continue
}
