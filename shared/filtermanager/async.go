package filtermanager

import (
	"sync/atomic"
	"time"
)

// Asynchronous phases run on reused goroutines. A new goroutine starts with a small stack,
// and plugin code grows it once or twice a request (sentinel, the Redis client, the OTLP
// exporter): each growth copies the stack and walks every frame's tables, ~18k instructions
// (runtime.copystack; make bench: one a request in B5, two in B6). A goroutine that ran a
// phase keeps its grown stack for the next one.
//
// A goroutine that finished a phase waits on asyncIdle for the next. The reaper, a timer
// armed while goroutines wait, tells them to exit once no phase started for asyncLinger, so
// at rest the goroutine count is back at its idle value (metrics.RuntimeGoroutines); under
// load as many wait as the most phases that ran at once since the load began.

// asyncTask is the rest of a phase to run in a goroutine (stream.run).
type asyncTask struct {
	s        *stream
	d        *side
	k        phaseKind
	chunkEnd bool
	from     int
}

// The goroutines serve every stream of the process, like the runtime's own, hence globals.
var (
	// asyncIdle hands a task to a waiting goroutine. Unbuffered: a send succeeds only when
	// one waits; the zero task tells it to exit.
	asyncIdle     = make(chan asyncTask)
	asyncWaiting  atomic.Int32 // goroutines waiting on asyncIdle (or about to)
	asyncLast     atomic.Int64 // nanotime when the last task was handed out
	asyncReaperOn atomic.Bool  // the reaper's timer is armed
)

// asyncLinger is how long without a new phase the waiting goroutines are kept: long enough to
// carry a loaded worker thread's phases from one request to the next, short enough that after
// the load the goroutine count is back at its idle value well before the runtime gauges settle
// (at least three samples, 1 s apart by default).
const asyncLinger = 50 * time.Millisecond

// startAsync runs t in a waiting goroutine or a new one. The channel send (or the go
// statement) makes everything the caller wrote before visible to the goroutine.
func startAsync(t asyncTask) {
	asyncLast.Store(nanotime())
	select {
	case asyncIdle <- t:
	default:
		go asyncWorker(t)
	}
}

func asyncWorker(t asyncTask) {
	for {
		t.s.runAsync(t.d, t.k, t.chunkEnd, t.from)
		t = asyncTask{} // the finished stream is not kept alive while waiting
		asyncWaiting.Add(1)
		if !asyncReaperOn.Load() && asyncReaperOn.CompareAndSwap(false, true) {
			time.AfterFunc(asyncLinger, reapAsync)
		}
		// A plain receive, not a select with a timer: this wait is on every phase's path.
		t = <-asyncIdle
		asyncWaiting.Add(-1)
		if t.s == nil {
			return // the reaper's signal
		}
	}
}

// reapAsync runs on the reaper's timer: it re-arms itself while phases keep starting, and
// once none started for asyncLinger it tells every waiting goroutine to exit.
func reapAsync() {
	if idle := time.Duration(nanotime() - asyncLast.Load()); idle < asyncLinger {
		time.AfterFunc(asyncLinger-idle, reapAsync)
		return
	}
	for n := asyncWaiting.Load(); n > 0; n-- {
		select {
		case asyncIdle <- asyncTask{}:
		default: // counted but not waiting yet (or handed a task meanwhile)
		}
	}
	asyncReaperOn.Store(false)
	// Goroutines that started waiting after the count, or were not waiting yet, get another
	// round.
	if asyncWaiting.Load() > 0 && asyncReaperOn.CompareAndSwap(false, true) {
		time.AfterFunc(asyncLinger, reapAsync)
	}
}
