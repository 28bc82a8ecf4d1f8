package sentinel

import (
	"testing"
	"time"
)

// The clock caches the millisecond while it is read and parks its ticker
// after idleFor ticks without a read, so an idle moe costs no CPU.
func TestIdleClockParksWhenUnusedAndWakesOnRead(t *testing.T) {
	c := newIdleClock()
	c.idleFor = 20 // 20 ms instead of a second, for the test
	before := uint64(time.Now().UnixMilli())
	if got := c.CurrentTimeMillis(); got < before || got > before+1000 {
		t.Fatalf("first read %d, now %d", got, before)
	}
	if !c.isRunning() {
		t.Fatal("the first read did not start the ticker")
	}
	// Reads keep it running and advancing.
	for i := 0; i < 30; i++ {
		c.CurrentTimeMillis()
		time.Sleep(time.Millisecond)
	}
	if !c.isRunning() {
		t.Fatal("parked while being read")
	}
	if a, b := c.CurrentTimeMillis(), uint64(time.Now().UnixMilli()); b-a > 50 {
		t.Fatalf("cached time %d lags %d ms", a, b-a)
	}
	deadline := time.Now().Add(2 * time.Second)
	for c.isRunning() {
		if time.Now().After(deadline) {
			t.Fatal("did not park within 2s of the last read")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if c.nowMs.Load() != 0 {
		t.Fatal("parked with a stale cached time")
	}
	// A read while parked is exact and wakes it again.
	now := uint64(time.Now().UnixMilli())
	if got := c.CurrentTimeMillis(); got < now || got > now+50 || !c.isRunning() {
		t.Fatalf("read while parked: %d (now %d), running %v", got, now, c.isRunning())
	}
}
