package filtermanager_test

import (
	"fmt"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// An observing plugin (an audit log) sees what every plugin decided: the
// consumer identified, explicit decisions, and who refused the request.
func TestDecisionsAreRecordedForObservingChains(t *testing.T) {
	auth := plugin(t, api.Needs{}, recvF{func(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		if _, ok := h.Get("x-key"); !ok {
			return ctx.Reply(401, "missing key\nmore", nil)
		}
		ctx.SetConsumer(&api.Consumer{Name: "alice"})
		return api.Continue
	}})
	limit := plugin(t, api.Needs{}, recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		ctx.Decide(true, "under the limit")
		return api.Continue
	}})
	var got []api.Decision
	audit := func(observe bool) string {
		return plugin(t, api.Needs{Observe: observe}, logF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.ResponseHeaderMap, _ api.RequestInfo) {
			got = ctx.Decisions()
		}})
	}
	cfg := mustChain(t, audit(true), auth, limit)
	do(t, cfg, fakeenvoy.Request{Headers: [][2]string{{"x-key", "k"}}})
	if want := fmt.Sprint([]api.Decision{{Plugin: auth, Allowed: true, Reason: "consumer alice"}, {Plugin: limit, Allowed: true, Reason: "under the limit"}}); fmt.Sprint(got) != want {
		t.Errorf("allowed request: %v, want %v", got, want)
	}
	do(t, cfg, fakeenvoy.Request{})
	if want := fmt.Sprint([]api.Decision{{Plugin: auth, Allowed: false, Reason: "missing key", Status: 401}}); fmt.Sprint(got) != want {
		t.Errorf("refused request: %v, want %v", got, want)
	}
	// Without an observing plugin nothing is kept (recording costs nothing).
	got = []api.Decision{{Plugin: "stale"}}
	do(t, mustChain(t, audit(false), auth, limit), fakeenvoy.Request{Headers: [][2]string{{"x-key", "k"}}})
	if got != nil {
		t.Errorf("not observed, but kept %v", got)
	}
}

func TestTraceCallsTimesEveryHookOfTheRequest(t *testing.T) {
	var calls []api.PluginCall
	debug := plugin(t, api.Needs{}, bothF{
		recvF{func(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			if _, ok := h.Get("x-debug"); ok {
				ctx.TraceCalls()
			}
			return api.Continue
		}},
		sendF{func(ctx api.Context, _ api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			calls = ctx.Calls()
			return api.Continue
		}},
	})
	work := plugin(t, api.Needs{MayBlock: api.BlockReceive}, bothF{
		recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status { return api.Continue }},
		sendF{func(api.Context, api.ResponseHeaderMap, api.Buffer, api.HeaderMap) api.Status { return api.Continue }},
	})
	cfg := mustChain(t, debug, work)
	do(t, cfg, fakeenvoy.Request{Headers: [][2]string{{"x-debug", "1"}}})
	// The debug plugin's own OnReceive ran before it turned tracing on; its
	// Append reads the list before its own call is recorded.
	if len(calls) != 2 || calls[0].Plugin != work || calls[0].Hook != "OnReceive" || calls[1].Plugin != work || calls[1].Hook != "Append" {
		t.Fatalf("calls %+v", calls)
	}
	for _, c := range calls {
		if c.Start.IsZero() || c.Duration <= 0 || c.Status != api.Continue {
			t.Errorf("call %+v", c)
		}
	}
	calls = nil
	do(t, cfg, fakeenvoy.Request{})
	if calls != nil {
		t.Fatalf("traced without asking: %+v", calls)
	}
}
