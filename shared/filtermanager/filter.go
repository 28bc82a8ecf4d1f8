package filtermanager

import (
	"strconv"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"
)

// The Envoy entry points (envoy.StreamFilter). Each one attaches what Envoy
// handed over to the side, decides which pass runs, and leaves the running
// to engine.go. The chain is read under the lock: a consumer switch in a
// decode goroutine may replace it while Envoy encodes a local reply on the
// worker thread.

func (s *stream) DecodeHeaders(h envoy.RequestHeaderMap, endStream bool) envoy.StatusType {
	return s.onHeaders(&s.dec, h, endStream)
}

func (s *stream) EncodeHeaders(h envoy.ResponseHeaderMap, endStream bool) envoy.StatusType {
	return s.onHeaders(&s.enc, h, endStream)
}

// onHeaders: state WaitingHeader -> ProcessingHeader (some plugin has a header
// hook) or straight Continue. With a WholeBody plugin and a body to come, the
// header pass stops before that plugin and the headers return StopAndBuffer.
func (s *stream) onHeaders(d *side, h envoy.HeaderMap, end bool) envoy.StatusType {
	s.mu.Lock()
	d.headers.attach(h, true)
	d.endStream = end
	dir := d.dir(s.ch.Load())
	run := len(dir.headers.order) > 0 && !s.failed && !s.destroyed
	if run {
		d.active = true
		d.buffering = !end && dir.whole >= 0
	} else {
		s.handBackLocked(d)
	}
	max := dir.maxBody
	s.mu.Unlock()
	if !run {
		return envoy.Continue
	}
	if d.buffering && max > 0 {
		if n, ok := s.contentLength(d); ok && n > max {
			return s.tooLarge(d, kHeaders)
		}
	}
	return s.run(d, kHeaders, false, 0)
}

// contentLength is d's content-length, from moe's copy of the headers (the
// SDK's Get would build its own map of them first); ok is false when there is
// none or it cannot be read.
func (s *stream) contentLength(d *side) (n int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		if recover() != nil {
			n, ok = 0, false
		}
	}()
	v, found := d.headers.firstLocked("content-length")
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

func (s *stream) DecodeData(b envoy.BufferInstance, endStream bool) envoy.StatusType {
	return s.onData(&s.dec, b, endStream)
}

func (s *stream) EncodeData(b envoy.BufferInstance, endStream bool) envoy.StatusType {
	return s.onData(&s.enc, b, endStream)
}

// onData: a buffered body is complete (whole-body pass), or a chunk goes to
// the streaming plugins. One lock: decide, enter the phase, attach the chunk.
func (s *stream) onData(d *side, b envoy.BufferInstance, end bool) envoy.StatusType {
	s.mu.Lock()
	dir := d.dir(s.ch.Load())
	buffering, max := d.buffering, dir.maxBody
	if (!buffering && len(dir.data.order) == 0) || s.failed || s.destroyed {
		s.mu.Unlock()
		return envoy.Continue
	}
	d.active = true
	if buffering && max > 0 && b.Len() > max {
		s.mu.Unlock()
		return s.tooLarge(d, kWhole)
	}
	d.bodyLocked(s).attach(b, true)
	s.mu.Unlock()
	if buffering {
		// !end means trailers follow. Envoy forwards this data before it hands
		// the trailers to Go (and, when the trailers arrived while a phase was
		// async, it only delivers them after this data continued), so whole-body
		// plugins run now, with the body and without the trailers.
		return s.run(d, kWhole, end, 0)
	}
	return s.run(d, kData, end, 0)
}

func (s *stream) DecodeTrailers(t envoy.RequestTrailerMap) envoy.StatusType {
	return s.onTrailers(&s.dec, t)
}

func (s *stream) EncodeTrailers(t envoy.ResponseTrailerMap) envoy.StatusType {
	return s.onTrailers(&s.enc, t)
}

// onTrailers: a buffered body without data ends here (whole-body pass with
// the trailers), or the streaming plugins get an empty last chunk.
func (s *stream) onTrailers(d *side, t envoy.HeaderMap) envoy.StatusType {
	s.mu.Lock()
	d.trailersLocked(s).attach(t, true)
	buffering := d.buffering
	if (!buffering && len(d.dir(s.ch.Load()).data.order) == 0) || s.failed || s.destroyed {
		s.mu.Unlock()
		return envoy.Continue
	}
	d.active = true
	if buffering {
		s.mu.Unlock()
		return s.run(d, kWhole, true, 0)
	}
	d.bodyLocked(s).attachEmpty() // an empty, read-only last chunk
	s.mu.Unlock()
	return s.run(d, kData, true, 0)
}

// OnLog runs the access-log hooks once, with the headers Envoy hands over
// (valid only during this call).
func (s *stream) OnLog(reqH envoy.RequestHeaderMap, reqT envoy.RequestTrailerMap, respH envoy.ResponseHeaderMap, respT envoy.ResponseTrailerMap) {
	s.mu.Lock()
	if len(s.ch.Load().logs) == 0 || s.logged {
		s.mu.Unlock()
		return
	}
	s.logged = true
	if reqH != nil {
		s.dec.headers.attach(reqH, false)
	}
	if reqT != nil {
		s.dec.trailersLocked(s).attach(reqT, false)
	}
	if respH != nil {
		s.enc.headers.attach(respH, false)
	}
	if respT != nil {
		s.enc.trailersLocked(s).attach(respT, false)
	}
	if b := s.dec.body; b != nil {
		b.writable = false
	}
	if b := s.enc.body; b != nil {
		b.writable = false
	}
	s.logActive = true
	s.mu.Unlock()

	s.runLogs(reqH != nil, respH != nil)

	s.mu.Lock()
	s.logActive = false
	s.mu.Unlock()
}

func (s *stream) OnLogDownstreamStart(envoy.RequestHeaderMap) {}
func (s *stream) OnLogDownstreamPeriodic(envoy.RequestHeaderMap, envoy.RequestTrailerMap, envoy.ResponseHeaderMap, envoy.ResponseTrailerMap) {
}
func (s *stream) OnStreamComplete() {}

// OnDestroy ends the request: from now on every plugin API call fails with
// ErrDestroyed, ctx.Done() is closed, and each created filter's OnDestroy runs
// once. If Envoy never called OnLog, the access-log hooks run here (without
// headers) so they too run exactly once.
func (s *stream) OnDestroy(envoy.DestroyReason) {
	s.mu.Lock()
	if s.destroyHooksRan {
		s.mu.Unlock()
		return
	}
	s.destroyHooksRan = true
	s.destroyed = true
	if s.done != nil {
		close(s.done)
	} else {
		s.done = closedChan
	}
	ch := s.ch.Load()
	runLogs := !s.logged && len(ch.logs) > 0
	s.logged = true
	slots := s.slots
	// No header map can be read from now on (destroyed): their copies and
	// pending writes go back to the pool.
	s.dec.headers.releaseLocked()
	s.enc.headers.releaseLocked()
	if t := s.dec.trailers; t != nil {
		t.releaseLocked()
	}
	if t := s.enc.trailers; t != nil {
		t.releaseLocked()
	}
	s.mu.Unlock()
	if runLogs {
		s.runLogs(false, false)
	}
	if !ch.destroys {
		return
	}
	for i := 0; i < len(slots); i++ {
		i = s.destroysFrom(slots, i)
	}
}
