package metrics

import (
	"sync"
	"time"
)

// flusher is a changed metric waiting to be written to Envoy.
type flusher interface{ flush() }

// The flush queue is global like the metric table: one flusher goroutine
// serves every metric of the process.
var (
	queueMu   sync.Mutex
	flushMu   sync.Mutex // one flush at a time: a gauge is never recorded out of order
	queue     []flusher
	wake      = make(chan struct{}, 1)
	startOnce sync.Once
)

// enqueue adds a metric that changed since its last flush (once per flush:
// the metric's queued flag guards it) and wakes the flusher.
func enqueue(f flusher) {
	queueMu.Lock()
	queue = append(queue, f)
	queueMu.Unlock()
	if FlushInterval() == 0 {
		Flush() // unbatched (FlushIntervalEnv=0)
		return
	}
	startOnce.Do(func() { go flushLoop() })
	select {
	case wake <- struct{}{}:
	default:
	}
}

// flushLoop parks until a metric changes, lets updates gather for
// FlushInterval, then writes them all.
func flushLoop() {
	for range wake {
		time.Sleep(FlushInterval())
		Flush()
	}
}

// Flush writes every changed metric to Envoy now. The flusher calls it; tests
// that read the fake stat store call it first.
func Flush() {
	flushMu.Lock()
	defer flushMu.Unlock()
	queueMu.Lock()
	batch := queue
	queue = nil
	queueMu.Unlock()
	for _, f := range batch {
		f.flush()
	}
}
