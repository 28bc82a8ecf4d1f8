package filtermanager_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// goroutineID reads the running goroutine's number from its stack header ("goroutine 7 [").
func goroutineID() string {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	return string(b[:bytes.IndexByte(b, ' ')])
}

// Asynchronous phases run on reused goroutines (async.go): the next request's phase gets the
// goroutine the last one ran on, and once no phase comes the goroutines exit.
func TestAsyncPhasesReuseTheirGoroutineAndItExitsWhenIdle(t *testing.T) {
	var ids []string
	name := plugin(t, api.Needs{MayBlock: api.BlockReceive}, recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
		ids = append(ids, goroutineID())
		return api.Continue
	}})
	cfg := mustChain(t, name)
	// Goroutines left waiting by an earlier test exit 50 ms after the last phase.
	time.Sleep(200 * time.Millisecond)
	before := runtime.NumGoroutine()
	for i := range 3 {
		if i > 0 {
			// The phase's goroutine reports the phase done just before it waits again: give
			// it the moment (a phase that starts before then gets a new goroutine).
			time.Sleep(5 * time.Millisecond)
		}
		if res := do(t, cfg, fakeenvoy.Request{Path: "/"}); res.Status != 200 {
			t.Fatalf("status %d", res.Status)
		}
	}
	if len(ids) != 3 || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Errorf("the phases ran on goroutines %v, want one reused goroutine", ids)
	}
	if ids[0] == goroutineID() {
		t.Errorf("the phase ran on the test's own goroutine")
	}
	tb.Eventually(t, fmt.Sprintf("the goroutine count to fall back to %d after the last phase", before), func() bool {
		return runtime.NumGoroutine() <= before
	})
}
