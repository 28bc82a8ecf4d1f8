package sentinel

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/alibaba/sentinel-golang/util"
)

// idleClock is sentinel's millisecond clock without its cost when idle.
//
// Sentinel reads the time in milliseconds several times per entry. Its own
// answer (Sentinel.UseCacheTime) is a goroutine that stores the time every
// millisecond, forever: about 44 ms of CPU per idle second in moe-host. This
// clock keeps the same cached millisecond while requests come, and its
// ticker parks itself after a second without one; the first call after that
// reads the time directly and wakes the ticker. Written by hand because
// sentinel-golang offers only the always-on ticker (util.StartTimeTicker)
// and the plain clock (one time.Now per read).
type idleClock struct {
	nowMs   atomic.Uint64 // the cached time; 0 while parked
	used    atomic.Bool   // read since the ticker's last tick
	mu      sync.Mutex
	running bool
	tick    time.Duration
	idleFor int // ticks without a read before parking
}

var _ util.Clock = (*idleClock)(nil)

func newIdleClock() *idleClock {
	return &idleClock{tick: time.Millisecond, idleFor: 1000}
}

func (c *idleClock) CurrentTimeMillis() uint64 {
	if !c.used.Load() {
		c.used.Store(true)
	}
	if ms := c.nowMs.Load(); ms != 0 {
		return ms
	}
	c.wake()
	return uint64(time.Now().UnixMilli())
}

func (c *idleClock) wake() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return
	}
	c.running = true
	c.nowMs.Store(uint64(time.Now().UnixMilli()))
	go c.run()
}

// run updates the cached time every tick until it has not been read for
// idleFor ticks, then parks.
func (c *idleClock) run() {
	t := time.NewTicker(c.tick)
	defer t.Stop()
	idle := 0
	for range t.C {
		if c.used.Swap(false) {
			idle = 0
		} else if idle++; idle >= c.idleFor {
			c.mu.Lock()
			c.nowMs.Store(0)
			c.running = false
			c.mu.Unlock()
			return
		}
		c.nowMs.Store(uint64(time.Now().UnixMilli()))
	}
}

// isRunning reports whether the ticker runs (tests).
func (c *idleClock) isRunning() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running
}

func (c *idleClock) Now() time.Time          { return time.Now() }
func (c *idleClock) Sleep(d time.Duration)   { time.Sleep(d) }
func (c *idleClock) CurrentTimeNano() uint64 { return uint64(time.Now().UnixNano()) }
