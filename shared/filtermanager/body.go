package filtermanager

import (
	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/api"
)

// bodyBuf is the plugin-facing body (or chunk) of one side. Like headerMap it
// checks ownership under the stream mutex. The content is copied from Envoy
// once, on first read; changes are made on the Go copy and written back to
// Envoy in one Set when the phase ends (flushLocked).
type bodyBuf struct {
	s        *stream
	env      envoy.BufferInstance // nil: no Envoy buffer (empty last chunk, or none)
	data     []byte
	kind     objKind
	present  bool // a body (possibly empty) is available
	writable bool
	loaded   bool // data holds the content
	dirty    bool
}

func (b *bodyBuf) attach(env envoy.BufferInstance, writable bool) {
	b.env, b.present, b.writable = env, true, writable
	b.data, b.loaded, b.dirty = nil, false, false
}

// attachEmpty is the empty last chunk a streaming plugin gets with the
// trailers.
func (b *bodyBuf) attachEmpty() {
	b.env, b.present, b.writable = nil, true, false
	b.data, b.loaded, b.dirty = nil, true, false
}

func (b *bodyBuf) detach() {
	b.env, b.present, b.writable = nil, false, false
	b.data, b.loaded, b.dirty = nil, false, false
}

func (b *bodyBuf) check(op string, write bool) error {
	s := b.s
	switch {
	case s.destroyed:
		return &api.StreamError{Op: b.kind.String() + " " + op, Err: api.ErrDestroyed}
	case !s.ownedLocked():
		return &api.StreamError{Op: b.kind.String() + " " + op, Err: api.ErrReleased}
	case !b.present:
		return &api.StreamError{Op: b.kind.String() + " " + op, Err: api.ErrUnavailable}
	case write && !b.writable:
		return &api.StreamError{Op: b.kind.String() + " " + op, Err: api.ErrReadOnly}
	}
	return nil
}

func (b *bodyBuf) loadLocked() {
	if !b.loaded {
		if b.env != nil {
			b.data = b.env.Bytes()
		}
		b.loaded = true
	}
}

func (b *bodyBuf) Bytes() []byte {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if err := b.check("Bytes", false); err != nil {
		panic(err)
	}
	b.loadLocked()
	return b.data
}

func (b *bodyBuf) String() string { return string(b.Bytes()) }

func (b *bodyBuf) Len() int {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if err := b.check("Len", false); err != nil {
		panic(err)
	}
	if !b.loaded && b.env != nil {
		return b.env.Len()
	}
	return len(b.data)
}

func (b *bodyBuf) modify(op string, fn func()) error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if err := b.check(op, true); err != nil {
		return err
	}
	b.loadLocked()
	fn()
	b.dirty = true
	return nil
}

func (b *bodyBuf) Set(d []byte) error {
	return b.modify("Set", func() { b.data = append([]byte(nil), d...) })
}
func (b *bodyBuf) SetString(s string) error {
	return b.modify("SetString", func() { b.data = []byte(s) })
}
func (b *bodyBuf) Append(d []byte) error {
	return b.modify("Append", func() { b.data = append(b.data[:len(b.data):len(b.data)], d...) })
}
func (b *bodyBuf) AppendString(s string) error {
	return b.modify("AppendString", func() { b.data = append(b.data[:len(b.data):len(b.data)], s...) })
}
func (b *bodyBuf) Prepend(d []byte) error {
	return b.modify("Prepend", func() {
		b.data = append(append(make([]byte, 0, len(d)+len(b.data)), d...), b.data...)
	})
}
func (b *bodyBuf) Drain(n int) error {
	return b.modify("Drain", func() {
		if n > len(b.data) {
			n = len(b.data)
		}
		if n > 0 {
			b.data = b.data[n:]
		}
	})
}
func (b *bodyBuf) Reset() error { return b.modify("Reset", func() { b.data = nil }) }

// flushLocked writes a changed body back to Envoy with one Set.
func (b *bodyBuf) flushLocked() int {
	if !b.dirty || b.env == nil {
		return 0
	}
	b.dirty = false
	if err := b.env.Set(b.data); err != nil {
		return 0
	}
	return 1
}
