package filtermanager

import (
	"strconv"
	"sync"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/api"
)

// headerMap is the plugin-facing header (or trailer) map of one side of the
// stream. Every method takes the stream mutex and checks ownership first, so a
// goroutine that outlives its phase gets a *StreamError instead of reaching the
// SDK (and C) or racing the phase that owns the stream.
//
// Reads go to the SDK map, which copies all headers from Envoy in one cgo call
// on first use and then serves from Go memory: at most one copy per phase.
//
// Writes are coalesced: Set/Add/Del only change `pending` (Go memory). flush
// sends the final state of each changed key to Envoy when the chain hands the
// stream back (or before Envoy must see them: route cache clear). So N plugins
// setting the same header cost one Envoy write; a header set and then deleted
// costs one Del (or nothing if Envoy never had it); a value equal to what Envoy
// has costs nothing. Order of first change is kept so new headers are appended
// in a stable order.
type headerMap struct {
	s        *stream
	env      envoy.HeaderMap
	w        *pendingWrites // nil until the first write: keeps the stream small
	kind     objKind
	writable bool
	// routeDirty: request headers changed since the last route refresh.
	routeDirty bool
}

// pendingWrites are the header changes not yet written to Envoy, in the
// order first changed. A request changes a handful of headers at most, so a
// short list (inline for four) is cheaper than a map, which cost a request
// ~400 bytes for one header set.
type pendingWrites struct {
	list []pendingWrite
	buf  [4]pendingWrite
}

type pendingWrite struct {
	key    string
	values []string // nil: deleted
}

// writesPool recycles pendingWrites between requests: with ~2.7 MB allocated
// between two GC cycles of libgolang.so, 192 bytes a request is a cycle every
// ~14000 requests. (A global because requests share it; sync.Pool is safe for
// that.) Reuse is safe because a pendingWrites is reachable only from its
// headerMap.w, read and written under the stream mutex, and nothing hands out
// pointers into it: Values returns the values slices, which are never pooled.
var writesPool = sync.Pool{New: func() any {
	w := new(pendingWrites)
	w.list = w.buf[:0]
	return w
}}

// release returns w to the pool once its changes reached Envoy.
func (w *pendingWrites) release() {
	// Drop the strings for the GC (header values can be secrets): the list,
	// and the inline room too when the list outgrew it.
	clear(w.list)
	clear(w.buf[:])
	w.list = w.buf[:0]
	writesPool.Put(w)
}

func (w *pendingWrites) find(k string) ([]string, bool) {
	for i := range w.list {
		if w.list[i].key == k {
			return w.list[i].values, true
		}
	}
	return nil, false
}

func (w *pendingWrites) set(k string, vs []string) {
	for i := range w.list {
		if w.list[i].key == k {
			w.list[i].values = vs
			return
		}
	}
	w.list = append(w.list, pendingWrite{key: k, values: vs})
}

// objKind names a header map or body in errors without storing a string per
// request.
type objKind uint8

const (
	reqHeaders objKind = iota
	reqTrailers
	reqBody
	respHeaders
	respTrailers
	respBody
)

var kindNames = [...]string{"request headers", "request trailers", "request body", "response headers", "response trailers", "response body"}

func (k objKind) String() string { return kindNames[k] }

func (h *headerMap) attach(env envoy.HeaderMap, writable bool) {
	h.env = env
	h.writable = writable
}

func (h *headerMap) check(op string, write bool) error {
	s := h.s
	switch {
	case s.destroyed:
		return &api.StreamError{Op: h.kind.String() + " " + op, Err: api.ErrDestroyed}
	case !s.ownedLocked():
		return &api.StreamError{Op: h.kind.String() + " " + op, Err: api.ErrReleased}
	case h.env == nil:
		return &api.StreamError{Op: h.kind.String() + " " + op, Err: api.ErrUnavailable}
	case write && !h.writable:
		return &api.StreamError{Op: h.kind.String() + " " + op, Err: api.ErrReadOnly}
	}
	return nil
}

func (h *headerMap) valuesLocked(k string) []string {
	if h.w != nil {
		if vs, ok := h.w.find(k); ok {
			return vs
		}
	}
	return h.env.Values(k)
}

func (h *headerMap) Get(key string) (string, bool) {
	k := api.LowerKey(key)
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if err := h.check("Get", false); err != nil {
		panic(err)
	}
	if h.w != nil {
		if vs, ok := h.w.find(k); ok {
			if len(vs) == 0 {
				return "", false
			}
			return vs[0], true
		}
	}
	return h.env.Get(k)
}

func (h *headerMap) Values(key string) []string {
	k := api.LowerKey(key)
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if err := h.check("Values", false); err != nil {
		panic(err)
	}
	vs := h.valuesLocked(k)
	if len(vs) == 0 {
		return nil
	}
	// No copy: the API says callers must not modify the slice, and neither
	// side changes it in place: pending writes get a new slice on every
	// Set/Add, and the SDK's map replaces or appends (Set, Add). The capacity
	// is clipped so that a caller's append reallocates instead of writing
	// into the SDK's backing array.
	return vs[:len(vs):len(vs)]
}

func (h *headerMap) setLocked(k string, vs []string) {
	if h.w == nil {
		h.w = writesPool.Get().(*pendingWrites)
	}
	h.w.set(k, vs)
	h.routeDirty = true
}

func (h *headerMap) changed(k string) bool {
	if h.w == nil {
		return false
	}
	_, ok := h.w.find(k)
	return ok
}

func (h *headerMap) Set(key, value string) error {
	k := api.LowerKey(key)
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if err := h.check("Set", true); err != nil {
		return err
	}
	h.setLocked(k, []string{value})
	return nil
}

func (h *headerMap) Add(key, value string) error {
	k := api.LowerKey(key)
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if err := h.check("Add", true); err != nil {
		return err
	}
	old := h.valuesLocked(k)
	vs := make([]string, len(old), len(old)+1)
	copy(vs, old)
	h.setLocked(k, append(vs, value))
	return nil
}

func (h *headerMap) Del(key string) error {
	k := api.LowerKey(key)
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if err := h.check("Del", true); err != nil {
		return err
	}
	h.setLocked(k, nil)
	return nil
}

type kv struct{ k, v string }

// snapshotLocked returns the current pairs, pending changes applied.
func (h *headerMap) snapshotLocked() []kv {
	out := make([]kv, 0, 16)
	h.env.Range(func(k, v string) bool {
		if !h.changed(k) {
			out = append(out, kv{k, v})
		}
		return true
	})
	if h.w != nil {
		for _, p := range h.w.list {
			for _, v := range p.values {
				out = append(out, kv{p.key, v})
			}
		}
	}
	return out
}

// Range iterates over a snapshot, so f may call the map's other methods.
func (h *headerMap) Range(f func(key, value string) bool) {
	h.s.mu.Lock()
	if err := h.check("Range", false); err != nil {
		h.s.mu.Unlock()
		panic(err)
	}
	snap := h.snapshotLocked()
	h.s.mu.Unlock()
	for _, p := range snap {
		if !f(p.k, p.v) {
			return
		}
	}
}

func (h *headerMap) Len() int {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if err := h.check("Len", false); err != nil {
		panic(err)
	}
	n := 0
	last := ""
	h.env.Range(func(k, _ string) bool {
		if k != last {
			last = k
			if !h.changed(k) {
				n++
			}
		}
		return true
	})
	if h.w != nil {
		for _, p := range h.w.list {
			if len(p.values) > 0 {
				n++
			}
		}
	}
	return n
}

// replaceAll implements Set{Request,Response}Headers/Trailers: every key not in
// src is deleted (pseudo headers are kept unless src has them).
func (h *headerMap) replaceAll(src api.HeaderMap) error {
	want := map[string][]string{}
	if src != nil {
		src.Range(func(k, v string) bool {
			k = api.LowerKey(k)
			want[k] = append(want[k], v)
			return true
		})
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if err := h.check("replace", true); err != nil {
		return err
	}
	for _, p := range h.snapshotLocked() {
		if _, keep := want[p.k]; !keep && (len(p.k) == 0 || p.k[0] != ':') {
			h.setLocked(p.k, nil)
		}
	}
	for k, vs := range want {
		h.setLocked(k, vs)
	}
	return nil
}

func equalValues(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// flushLocked writes pending changes to Envoy. It returns the number of SDK
// write calls made (tests assert on it).
func (h *headerMap) flushLocked() int {
	if h.w == nil || len(h.w.list) == 0 || h.env == nil || !h.writable {
		return 0
	}
	writes := 0
	for _, p := range h.w.list {
		k, vs := p.key, p.values
		cur := h.env.Values(k)
		if equalValues(cur, vs) {
			continue
		}
		if len(vs) == 0 {
			h.env.Del(k)
			writes++
			continue
		}
		h.env.Set(k, vs[0])
		writes++
		for _, v := range vs[1:] {
			h.env.Add(k, v)
			writes++
		}
	}
	h.w.release()
	h.w = nil
	return writes
}

func (h *headerMap) pseudo(name string) string {
	v, _ := h.Get(name)
	return v
}

func (h *headerMap) Method() string           { return h.pseudo(":method") }
func (h *headerMap) Path() string             { return h.pseudo(":path") }
func (h *headerMap) Host() string             { return h.pseudo(":authority") }
func (h *headerMap) Scheme() string           { return h.pseudo(":scheme") }
func (h *headerMap) SetMethod(v string) error { return h.Set(":method", v) }
func (h *headerMap) SetPath(v string) error   { return h.Set(":path", v) }
func (h *headerMap) SetHost(v string) error   { return h.Set(":authority", v) }

func (h *headerMap) Status() int {
	n, _ := strconv.Atoi(h.pseudo(":status"))
	return n
}

func (h *headerMap) SetStatus(code int) error { return h.Set(":status", strconv.Itoa(code)) }
