package fakeenvoy

import (
	"strconv"
	"strings"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"
)

// headerObj is the SDK's header (or trailer) map of one phase: like the real
// one it copies the whole map from "Envoy" on first read and then reads Go
// memory; writes go to both its copy and "Envoy".
type headerObj struct {
	st       *stream
	sd       *fside
	trailers bool
	logPhase bool
	local    map[string][]string
}

func newHeaderObj(st *stream, sd *fside, trailers, logPhase bool) *headerObj {
	return &headerObj{st: st, sd: sd, trailers: trailers, logPhase: logPhase}
}

func (h *headerObj) canon() map[string][]string {
	if h.trailers {
		return h.sd.trailers
	}
	return h.sd.headers
}

func (h *headerObj) loadLocked() {
	if h.local != nil {
		return
	}
	if !h.logPhase {
		h.st.checkLocked(h.sd, "CopyHeaders")
	} else if h.st.destroyed || !h.st.inLog {
		h.st.violation("CopyHeaders of a log-phase map outside the log phase")
		panic("not proccessing Go")
	}
	h.local = cloneMap(h.canon())
	h.st.res.HeaderCopies++
}

func (h *headerObj) writeLocked(what string) {
	if h.logPhase {
		h.st.violation("%s on a log-phase header map", what)
		panic("invalid phase")
	}
	h.st.checkLocked(h.sd, what)
	if !h.trailers && !h.sd.headersHeld {
		h.st.violation("%s on headers already forwarded", what)
		panic("invalid phase, maybe headers/buffer already continued")
	}
	h.st.res.HeaderWrites++
}

func (h *headerObj) GetRaw(name string) string {
	v, _ := h.Get(name)
	return v
}

func (h *headerObj) Get(key string) (string, bool) {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	h.loadLocked()
	v := h.local[strings.ToLower(key)]
	if len(v) == 0 {
		return "", false
	}
	return v[0], true
}

func (h *headerObj) Values(key string) []string {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	h.loadLocked()
	return h.local[strings.ToLower(key)]
}

func (h *headerObj) Set(key, value string) {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	h.loadLocked()
	h.writeLocked("SetHeader")
	k := strings.ToLower(key)
	h.local[k] = []string{value}
	h.canon()[k] = []string{value}
}

func (h *headerObj) Add(key, value string) {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	h.loadLocked()
	h.writeLocked("AddHeader")
	k := strings.ToLower(key)
	h.local[k] = append(h.local[k], value)
	c := h.canon()
	c[k] = append(c[k], value)
}

func (h *headerObj) Del(key string) {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	h.loadLocked()
	h.writeLocked("RemoveHeader")
	k := strings.ToLower(key)
	delete(h.local, k)
	delete(h.canon(), k)
}

func (h *headerObj) Range(f func(key, value string) bool) {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	h.loadLocked()
	for k, vs := range h.local {
		for _, v := range vs {
			if !f(k, v) {
				return
			}
		}
	}
}

func (h *headerObj) RangeWithCopy(f func(key, value string) bool) {
	h.st.mu.Lock()
	h.loadLocked()
	c := cloneMap(h.local)
	h.st.mu.Unlock()
	for k, vs := range c {
		for _, v := range vs {
			if !f(k, v) {
				return
			}
		}
	}
}

func (h *headerObj) GetAllHeaders() map[string][]string {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	h.loadLocked()
	return cloneMap(h.local)
}

func (h *headerObj) Scheme() string     { return h.GetRaw(":scheme") }
func (h *headerObj) Method() string     { return h.GetRaw(":method") }
func (h *headerObj) Host() string       { return h.GetRaw(":authority") }
func (h *headerObj) Path() string       { return h.GetRaw(":path") }
func (h *headerObj) SetMethod(v string) { h.Set(":method", v) }
func (h *headerObj) SetHost(v string)   { h.Set(":authority", v) }
func (h *headerObj) SetPath(v string)   { h.Set(":path", v) }
func (h *headerObj) Status() (int, bool) {
	v, ok := h.Get(":status")
	if !ok {
		return 0, false
	}
	n, _ := strconv.Atoi(v)
	return n, true
}

// buf is the SDK's BufferInstance for one data callback.
type buf struct {
	st   *stream
	sd   *fside
	data []byte
}

func newBuf(st *stream, sd *fside, data []byte) *buf { return &buf{st: st, sd: sd, data: data} }

func (b *buf) snapshot() []byte {
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	return append([]byte(nil), b.data...)
}

func (b *buf) read() {
	b.st.checkLocked(b.sd, "GetBuffer")
}

func (b *buf) write(what string) {
	b.st.checkLocked(b.sd, what)
	b.st.res.BodyWrites++
}

func (b *buf) Bytes() []byte {
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	b.read()
	b.st.res.BodyCopies++
	return append([]byte(nil), b.data...)
}
func (b *buf) String() string { return string(b.Bytes()) }
func (b *buf) Len() int {
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	return len(b.data)
}
func (b *buf) mod(what string, fn func()) error {
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	b.write(what)
	fn()
	return nil
}
func (b *buf) Write(p []byte) (int, error) {
	return len(p), b.mod("Write", func() { b.data = append(b.data, p...) })
}
func (b *buf) WriteString(s string) (int, error) { return b.Write([]byte(s)) }
func (b *buf) WriteByte(c byte) error            { _, err := b.Write([]byte{c}); return err }
func (b *buf) WriteUint16(v uint16) error {
	_, err := b.Write([]byte{byte(v >> 8), byte(v)})
	return err
}
func (b *buf) WriteUint32(v uint32) error {
	_, err := b.Write([]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	return err
}
func (b *buf) WriteUint64(v uint64) error {
	if err := b.WriteUint32(uint32(v >> 32)); err != nil {
		return err
	}
	return b.WriteUint32(uint32(v))
}
func (b *buf) Drain(n int) {
	_ = b.mod("Drain", func() {
		if n > len(b.data) {
			n = len(b.data)
		}
		b.data = b.data[n:]
	})
}
func (b *buf) Reset() { _ = b.mod("Reset", func() { b.data = nil }) }
func (b *buf) Append(d []byte) error {
	return b.mod("Append", func() { b.data = append(b.data, d...) })
}
func (b *buf) Set(d []byte) error          { return b.mod("Set", func() { b.data = append([]byte(nil), d...) }) }
func (b *buf) SetString(s string) error    { return b.Set([]byte(s)) }
func (b *buf) AppendString(s string) error { return b.Append([]byte(s)) }
func (b *buf) Prepend(d []byte) error {
	return b.mod("Prepend", func() { b.data = append(append([]byte(nil), d...), b.data...) })
}
func (b *buf) PrependString(s string) error { return b.Prepend([]byte(s)) }

// streamInfo is the SDK's StreamInfo.
type streamInfo stream

func (si *streamInfo) st() *stream { return (*stream)(si) }

func (si *streamInfo) guard(what string) {
	st := si.st()
	if st.destroyed {
		st.violation("%s after destroy", what)
		panic("golang filter has been destroyed")
	}
}

func (si *streamInfo) GetRouteName() string {
	st := si.st()
	st.mu.Lock()
	defer st.mu.Unlock()
	si.guard("GetRouteName")
	return st.route
}
func (si *streamInfo) FilterChainName() string { return "" }
func (si *streamInfo) Protocol() (string, bool) {
	st := si.st()
	st.mu.Lock()
	defer st.mu.Unlock()
	si.guard("Protocol")
	return st.req.Protocol, true
}
func (si *streamInfo) ResponseCode() (uint32, bool) {
	st := si.st()
	st.mu.Lock()
	defer st.mu.Unlock()
	si.guard("ResponseCode")
	if st.enc.headers == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(first(st.enc.headers[":status"]))
	return uint32(n), true
}
func (si *streamInfo) ResponseCodeDetails() (string, bool)    { return "", false }
func (si *streamInfo) AttemptCount() uint32                   { return 1 }
func (si *streamInfo) DynamicMetadata() envoy.DynamicMetadata { return nil }
func (si *streamInfo) DownstreamLocalAddress() string         { return "127.0.0.1:10000" }
func (si *streamInfo) DownstreamRemoteAddress() string {
	st := si.st()
	st.mu.Lock()
	defer st.mu.Unlock()
	si.guard("DownstreamRemoteAddress")
	return st.req.RemoteAddr
}
func (si *streamInfo) UpstreamLocalAddress() (string, bool)  { return "", false }
func (si *streamInfo) UpstreamRemoteAddress() (string, bool) { return "", false }
func (si *streamInfo) UpstreamClusterName() (string, bool) {
	st := si.st()
	st.mu.Lock()
	defer st.mu.Unlock()
	si.guard("UpstreamClusterName")
	return st.cluster, st.cluster != ""
}
func (si *streamInfo) FilterState() envoy.FilterState               { return (*filterState)(si) }
func (si *streamInfo) VirtualClusterName() (string, bool)           { return "", false }
func (si *streamInfo) WorkerID() uint32                             { return 0 }
func (si *streamInfo) DrainConnectionUponCompletion()               {}
func (si *streamInfo) DownstreamSslConnection() envoy.SslConnection { return nil }

// filterState is the SDK's FilterState: strings shared by the filters of a
// request. Like Envoy's r-APIs (SetStringFilterState/GetStringFilterState), it
// refuses calls while neither side is processing in Go.
type filterState stream

func (f *filterState) guardLocked(what string) {
	st := (*stream)(f)
	if st.destroyed {
		st.violation("%s after destroy", what)
		panic("golang filter has been destroyed")
	}
	if !st.dec.inGo && !st.enc.inGo && !st.inLog {
		st.violation("%s while not processing in Go", what)
		panic("not proccessing Go")
	}
}

func (f *filterState) SetString(key, value string, _ envoy.StateType, _ envoy.LifeSpan, _ envoy.StreamSharing) {
	st := (*stream)(f)
	st.mu.Lock()
	defer st.mu.Unlock()
	f.guardLocked("FilterState.SetString")
	st.fstate[key] = value
	st.res.FilterStateWrites++
}

func (f *filterState) GetString(key string) string {
	st := (*stream)(f)
	st.mu.Lock()
	defer st.mu.Unlock()
	f.guardLocked("FilterState.GetString")
	st.res.FilterStateReads++
	return st.fstate[key]
}
