package filtermanager

import (
	"time"
	_ "unsafe" // go:linkname
)

// The request's start is taken from the monotonic clock alone: time.Now reads
// the wall and the monotonic clocks (two vDSO calls, ~45 ns on a KVM guest,
// a tenth of a one-plugin request), and most requests never ask for the
// wall-clock start. StartTime derives it when first asked, from the wall clock
// then and the monotonic time elapsed since, so a wall-clock step before the
// request began does not skew it, and Duration never depends on the wall
// clock at all.

// nanotime is the runtime's monotonic clock (one vDSO call). The runtime
// keeps this name linkable on purpose ("widely used packages access it using
// linkname", runtime/time_nofake.go); no exported API reads the monotonic
// clock without the wall clock.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// startTimeLocked returns the request's wall-clock start, derived once and
// kept as Unix nanoseconds (8 bytes where a time.Time takes 24: the stream
// must stay in its size class).
func (s *stream) startTimeLocked() time.Time {
	if s.startWall == 0 {
		s.startWall = time.Now().UnixNano() - (nanotime() - s.startMono)
	}
	return time.Unix(0, s.startWall)
}

// elapsed is the time since the request started, on the monotonic clock.
func (s *stream) elapsed() time.Duration { return time.Duration(nanotime() - s.startMono) }
