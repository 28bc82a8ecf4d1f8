package sentinel

import (
	"testing"
	"time"
)

// The clock follows the wall clock it started from and never goes back.
func TestMonotonicClockFollowsTheWallClock(t *testing.T) {
	c := newMonotonicClock()
	var last uint64
	for range 50 {
		ms, wall := c.CurrentTimeMillis(), uint64(time.Now().UnixMilli())
		if ms < last {
			t.Fatalf("went back from %d to %d", last, ms)
		}
		if d := int64(wall) - int64(ms); d < -2 || d > 2 {
			t.Fatalf("clock %d, wall %d: %d ms apart", ms, wall, d)
		}
		if ns := c.CurrentTimeNano(); ns/uint64(time.Millisecond) < ms {
			t.Fatalf("nanoseconds %d behind milliseconds %d", ns, ms)
		}
		last = ms
		time.Sleep(time.Millisecond)
	}
}

func BenchmarkClockMonotonic(b *testing.B) {
	c := newMonotonicClock()
	var s uint64
	for i := 0; i < b.N; i++ {
		s += c.CurrentTimeMillis()
	}
	_ = s
}

func BenchmarkClockWall(b *testing.B) {
	var s uint64
	for i := 0; i < b.N; i++ {
		s += uint64(time.Now().UnixMilli())
	}
	_ = s
}
