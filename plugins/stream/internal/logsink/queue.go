package logsink

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// Line is a buffer holding one or more complete lines (each ending in '\n').
// Take one with GetLine, fill it, and hand it to Queue.Push, which owns it
// from then on and recycles it.
type Line = *[]byte

var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// GetLine returns an empty line buffer from the pool.
func GetLine() Line {
	l := linePool.Get().(Line)
	*l = (*l)[:0]
	return l
}

// PutLine recycles a buffer that was not pushed.
func PutLine(l Line) {
	if cap(*l) <= 64<<10 { // do not keep huge buffers
		linePool.Put(l)
	}
}

// WriteFunc writes one batch: n lines, concatenated. It runs on the queue's
// goroutine, never on Envoy's worker thread.
type WriteFunc func(batch []byte, n int) error

// QueueOptions configure a Queue.
type QueueOptions struct {
	// Size is the capacity in lines (> 0).
	Size int
	// MaxBatchBytes and MaxBatchLines bound one batch (defaults 256 KiB, no
	// line limit).
	MaxBatchBytes int
	MaxBatchLines int
	// Linger is how long a batch waits for more lines after its first one
	// (0: write what is queued right away).
	Linger time.Duration
	// Write writes a batch.
	Write WriteFunc
	// Written, Dropped and Failed count lines written, dropped because the
	// queue was full (or closed), and lost to a failed write.
	Written, Dropped, Failed api.Counter
	// Depth, if set, is kept at the number of queued lines... approximately:
	// it is updated once per batch.
	Depth api.Gauge
	// OnError is told about failed writes, at most once per ErrorEvery
	// (default 10s) so that a broken sink cannot flood the log.
	OnError    func(err error, lost int)
	ErrorEvery time.Duration
}

// Queue is a bounded queue of lines and one goroutine that writes them in
// batches. Push never blocks.
type Queue struct {
	o       QueueOptions
	ch      chan Line
	stop    chan struct{}
	done    chan struct{}
	closed  atomic.Bool
	once    sync.Once
	lastErr time.Time
}

// NewQueue starts the writer goroutine; Close stops it.
func NewQueue(o QueueOptions) *Queue {
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = 256 << 10
	}
	if o.ErrorEvery <= 0 {
		o.ErrorEvery = 10 * time.Second
	}
	q := &Queue{o: o, ch: make(chan Line, o.Size), stop: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

// Push queues l without blocking: false (and the line counted as dropped)
// when the queue is full or closed.
func (q *Queue) Push(l Line) bool {
	if q.closed.Load() {
		q.drop(l)
		return false
	}
	select {
	case q.ch <- l:
		return true
	default:
		q.drop(l)
		return false
	}
}

func (q *Queue) drop(l Line) {
	PutLine(l)
	if q.o.Dropped != nil {
		q.o.Dropped.Inc(1)
	}
}

// Len is the number of queued lines.
func (q *Queue) Len() int { return len(q.ch) }

// Close stops taking lines, writes what is queued and waits for that for at
// most timeout. It reports whether the queue was flushed in time.
func (q *Queue) Close(timeout time.Duration) bool {
	q.once.Do(func() {
		q.closed.Store(true)
		close(q.stop)
	})
	select {
	case <-q.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

func (q *Queue) run() {
	defer close(q.done)
	defer func() {
		// A panic in a sink must not kill Envoy; the queue stops working.
		if r := recover(); r != nil && q.o.OnError != nil {
			q.o.OnError(panicError{r}, 0)
		}
	}()
	batch := make([]byte, 0, 64<<10)
	var timer *time.Timer
	for {
		var first Line
		select {
		case first = <-q.ch:
		case <-q.stop:
			q.drain(batch)
			return
		}
		var n int
		batch, n = q.add(batch[:0], first, 0)
		if q.o.Linger > 0 {
			if timer == nil {
				timer = time.NewTimer(q.o.Linger)
			} else {
				timer.Reset(q.o.Linger)
			}
		linger:
			for !q.full(batch, n) {
				select {
				case l := <-q.ch:
					batch, n = q.add(batch, l, n)
				case <-timer.C:
					break linger
				case <-q.stop:
					break linger
				}
			}
			timer.Stop()
		}
		// Whatever else is queued already joins the batch.
	more:
		for !q.full(batch, n) {
			select {
			case l := <-q.ch:
				batch, n = q.add(batch, l, n)
			default:
				break more
			}
		}
		q.write(batch, n)
		if cap(batch) > 4*q.o.MaxBatchBytes {
			batch = make([]byte, 0, 64<<10)
		}
	}
}

// drain writes everything still queued (on Close).
func (q *Queue) drain(batch []byte) {
	for {
		batch = batch[:0]
		n := 0
	more:
		for !q.full(batch, n) {
			select {
			case l := <-q.ch:
				batch, n = q.add(batch, l, n)
			default:
				break more
			}
		}
		if n == 0 {
			return
		}
		q.write(batch, n)
	}
}

func (q *Queue) add(batch []byte, l Line, n int) ([]byte, int) {
	batch = append(batch, *l...)
	PutLine(l)
	return batch, n + 1
}

func (q *Queue) full(batch []byte, n int) bool {
	return len(batch) >= q.o.MaxBatchBytes || (q.o.MaxBatchLines > 0 && n >= q.o.MaxBatchLines)
}

func (q *Queue) write(batch []byte, n int) {
	if q.o.Depth != nil {
		q.o.Depth.Set(uint64(len(q.ch)))
	}
	err := q.o.Write(batch, n)
	if err == nil {
		if q.o.Written != nil {
			q.o.Written.Inc(uint64(n))
		}
		return
	}
	if q.o.Failed != nil {
		q.o.Failed.Inc(uint64(n))
	}
	if q.o.OnError != nil && time.Since(q.lastErr) >= q.o.ErrorEvery {
		q.lastErr = time.Now()
		q.o.OnError(err, n)
	}
}

type panicError struct{ v any }

func (p panicError) Error() string { return fmt.Sprintf("panic in log writer: %v", p.v) }
