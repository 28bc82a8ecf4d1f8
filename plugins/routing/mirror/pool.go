package mirror

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// job is one copy of a request for one target. The request parts are
// immutable snapshots shared by the copies of all targets.
type job struct {
	t      *target
	method string
	path   string
	host   string
	header [][2]string
	body   []byte
}

// pool is a fixed set of workers reading copies from a bounded queue. A
// request only ever tries to enqueue (never waits): a full queue drops the
// copy. Workers run outside every request and recover their own panics.
type pool struct {
	queue   chan *job
	done    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	once    sync.Once
	wg      sync.WaitGroup
	client  *http.Client
	timeout time.Duration
	log     api.Logger
}

func startPool(workers, size int, client *http.Client, timeout time.Duration, log api.Logger) *pool {
	p := &pool{queue: make(chan *job, size), done: make(chan struct{}), client: client, timeout: timeout, log: log}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(workers)
	for i := 0; i < workers; i++ {
		go p.work()
	}
	return p
}

// offer queues j unless the queue is full or the pool stopped.
func (p *pool) offer(j *job) bool {
	select {
	case <-p.done:
		return false
	default:
	}
	select {
	case p.queue <- j:
		return true
	default:
		return false
	}
}

func (p *pool) stop() {
	p.once.Do(func() {
		close(p.done)
		p.cancel()
		p.client.CloseIdleConnections()
	})
}

func (p *pool) work() {
	defer p.wg.Done()
	for {
		select {
		case <-p.done:
			return
		case j := <-p.queue:
			p.safeSend(j)
		}
	}
}

func (p *pool) safeSend(j *job) {
	defer func() {
		if r := recover(); r != nil {
			j.t.failed.Inc(1)
			p.log.Errorf("mirror to %s: panic: %v\n%s", j.t.name, r, debug.Stack())
		}
	}()
	p.send(j)
}

// hopByHop are not copied (Go's transport frames the copy itself).
var hopByHop = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-connection": true, "transfer-encoding": true,
	"upgrade": true, "te": true, "trailer": true, "content-length": true, "host": true,
}

func (p *pool) send(j *job) {
	// p.ctx ends when the config version goes away: the copy stops too.
	ctx, cancel := context.WithTimeout(p.ctx, p.timeout)
	defer cancel()
	var body io.Reader = http.NoBody
	if len(j.body) > 0 {
		body = bytes.NewReader(j.body)
	}
	req, err := http.NewRequestWithContext(ctx, j.method, j.t.base+j.path, body)
	if err != nil {
		j.t.failed.Inc(1)
		p.log.Debugf("mirror to %s: %v", j.t.name, err)
		return
	}
	for _, kv := range j.header {
		if kv[0] == "" || kv[0][0] == ':' || hopByHop[kv[0]] {
			continue
		}
		req.Header.Add(kv[0], kv[1])
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // none, as the original (not Go's default)
	}
	req.Host = j.host
	req.ContentLength = int64(len(j.body))
	resp, err := p.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			j.t.timeout.Inc(1)
		} else {
			j.t.failed.Inc(1)
		}
		p.log.Debugf("mirror to %s: %v", j.t.name, err)
		return
	}
	// Read a bounded part so the connection can be reused, then let it go.
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	resp.Body.Close()
	if cl := resp.StatusCode / 100; cl >= 1 && cl <= 5 {
		j.t.responses[cl].Inc(1)
	}
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
