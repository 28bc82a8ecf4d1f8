package filtermanager_test

import (
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// The start time is derived lazily from the monotonic clock (clock.go); it
// must still be when the stream was created, the same on every call, and
// Duration must count from it.
func TestRequestStartTimeIsWhenTheStreamWasCreated(t *testing.T) {
	const wait = 20 * time.Millisecond
	var received time.Time
	var starts []time.Time
	var durations []time.Duration
	name := plugin(t, api.Needs{MayBlock: api.BlockReceive}, struct {
		recvF
		logF
	}{
		recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			received = time.Now()
			time.Sleep(wait)
			return api.Continue
		}},
		logF{func(_ api.Context, _ api.RequestHeaderMap, _ api.ResponseHeaderMap, info api.RequestInfo) {
			for range 2 {
				starts = append(starts, info.StartTime())
				durations = append(durations, info.Duration())
			}
		}},
	})
	before := time.Now()
	res := do(t, mustChain(t, name), fakeenvoy.Request{Path: "/"})
	after := time.Now()
	if res.Status != 200 || len(starts) != 2 {
		t.Fatalf("status %d, %d start times", res.Status, len(starts))
	}
	start := starts[0]
	if !starts[1].Equal(start) {
		t.Errorf("StartTime changed between calls: %v then %v", start, starts[1])
	}
	// Wall-clock readings can only be compared within the clock's own
	// granularity: allow 1 ms either side.
	const slack = time.Millisecond
	if start.Before(before.Add(-slack)) || start.After(received.Add(slack)) {
		t.Errorf("start %v not between the request's creation %v and the plugin's call %v", start, before, received)
	}
	if durations[0] < wait || durations[1] < durations[0] {
		t.Errorf("durations %v: want at least %v and not decreasing", durations, wait)
	}
	if end := start.Add(durations[1]); end.After(after.Add(slack)) {
		t.Errorf("start + duration %v is after the request ended %v", end, after)
	}
}
