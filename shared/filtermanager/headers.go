package filtermanager

import (
	"slices"
	"strconv"
	"sync"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/cgo/envoyabi"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/log"
)

// headerMap is the plugin-facing header (or trailer) map of one side of the
// stream. Every method takes the stream mutex and checks ownership first, so a
// goroutine that outlives its phase gets a *StreamError instead of reaching the
// SDK (and C) or racing the phase that owns the stream.
//
// Reads are served from a flat copy of Envoy's entries (key, value pairs in
// Envoy's order), made in one cgo call on first use of each map Envoy hands
// over (so at most once a phase), by cgo/envoyabi straight into Go memory; a
// map that is not the SDK's (a test fake) is copied through its Range.
//
// Writes are coalesced: Set/Add/Del only change the pending list (Go memory).
// flush sends the final state of each changed key to Envoy when the chain
// hands the stream back (or before Envoy must see them: route cache clear), and
// applies it to the copy. So N plugins setting the same header cost one Envoy
// write; a header set and then deleted costs one Del (or nothing if Envoy never
// had it); a value equal to what Envoy has costs nothing. Order of first change
// is kept so new headers are appended in a stable order.
type headerMap struct {
	s        *stream
	env      envoy.HeaderMap
	st       *headerState // nil until the first read or write: keeps the stream small
	kind     objKind
	writable bool
	// routeDirty: request headers changed since the last route refresh.
	routeDirty bool
	// handedBack: the headers left for the next filter; Envoy may have
	// changed them since it announced their size, so no copy is made any
	// more (stream.handBackLocked).
	handedBack bool
}

// headerState is what a header map holds beyond its attachment: Envoy's
// entries as copied and the writes not yet sent. Recycled through statePool
// when the request ends.
type headerState struct {
	// abi is env at Envoy's C ABI (zero: not the SDK's map, use its methods),
	// looked up with the copy.
	abi envoyabi.Headers
	// pairs is Envoy's map as key, value, key, value..., with the writes
	// flushed since applied; nil until copied. shared: a slice of it was
	// handed out (Values, Range), so a change makes a new one instead of
	// changing it in place.
	pairs  []string
	shared bool
	// writes are the changes not yet written to Envoy, in the order first
	// changed. A request changes a handful of headers at most, so a short list
	// (inline for four) is cheaper than a map.
	writes []pendingWrite
	room   [4]pendingWrite
}

type pendingWrite struct {
	key    string
	values []string // nil: deleted
}

// statePool recycles headerStates between requests: with ~2.5 MB allocated
// between two GC cycles of libgolang.so, every byte a request allocates
// brings the next cycle closer. (A global because requests share it;
// sync.Pool is safe for that.) Reuse is safe because a headerState is
// reachable only from its headerMap.st, read and written under the stream
// mutex, and nothing hands out pointers into it: Values and Range hand out
// the pairs and values slices, which are never pooled.
var statePool = sync.Pool{New: func() any {
	st := new(headerState)
	st.writes = st.room[:0]
	return st
}}

// release returns st to the pool when the request ends.
func (st *headerState) release() {
	// Drop every string for the GC (header values can be secrets): the copy,
	// the list, and the inline room too when the list outgrew it.
	clear(st.writes)
	*st = headerState{}
	st.writes = st.room[:0]
	statePool.Put(st)
}

// stateLocked returns h's state, taking one from the pool on first use.
func (h *headerMap) stateLocked() *headerState {
	if h.st == nil {
		h.st = statePool.Get().(*headerState)
	}
	return h.st
}

// releaseLocked gives h's state back when the request ends.
func (h *headerMap) releaseLocked() {
	if h.st != nil {
		h.st.release()
		h.st = nil
	}
}

func (st *headerState) pending(k string) ([]string, bool) {
	for i := range st.writes {
		if st.writes[i].key == k {
			return st.writes[i].values, true
		}
	}
	return nil, false
}

func (st *headerState) setPending(k string, vs []string) {
	for i := range st.writes {
		if st.writes[i].key == k {
			st.writes[i].values = vs
			return
		}
	}
	st.writes = append(st.writes, pendingWrite{key: k, values: vs})
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

// attach makes env the map Envoy handed over for this phase. Writes still
// pending stay; the copy of the previous map does not.
func (h *headerMap) attach(env envoy.HeaderMap, writable bool) {
	h.env = env
	h.writable, h.handedBack = writable, false
	if st := h.st; st != nil {
		st.abi, st.pairs, st.shared = envoyabi.Headers{}, nil, false
	}
}

// layoutWarning logs once that the SDK's objects are used through their
// methods. (Global: the SDK's layout is the process's.)
var layoutWarning sync.Once

func warnLayout(err error) {
	layoutWarning.Do(func() {
		log.Printf(envoy.Warn, "", "", "using the Envoy Go SDK's methods, not its state at the C ABI (slower): %v", err)
	})
}

// loadLocked copies Envoy's map into pairs, once per attached map. It must
// run before the first write to that map and before the map is handed back
// (envoyabi.Headers.Copy).
func (h *headerMap) loadLocked(op string) *headerState {
	st := h.stateLocked()
	if st.pairs == nil {
		h.copyLocked(st, h.abiLocked(), op)
	}
	return st
}

// abiLocked is the attached map at Envoy's C ABI (zero: use its methods).
func (h *headerMap) abiLocked() envoyabi.Headers {
	abi, err := envoyabi.HeadersOf(h.env)
	if err != nil {
		warnLayout(err)
	}
	return abi
}

// copyLocked fills st.pairs from the attached map, at the C ABI when abi is
// valid, else through the map's Range.
func (h *headerMap) copyLocked(st *headerState, abi envoyabi.Headers, op string) {
	st.abi = abi
	if abi.Valid() {
		if h.handedBack {
			// Envoy would size the copy by counts it announced before it
			// changed the map: it writes past Go's buffer.
			panic(&api.StreamError{Op: h.kind.String() + " " + op, Err: api.ErrUnavailable})
		}
		pairs, err := abi.Copy()
		if err != nil {
			panic(h.envoyError(op, err))
		}
		st.pairs = pairs
		return
	}
	// Two allocations, as the C copy makes (the pairs, and here the callback
	// in place of the C copy's buffer). A Range that panics leaves no copy.
	st.pairs = make([]string, 0, 16)
	copied := false
	defer func() {
		if !copied {
			st.pairs = nil
		}
	}()
	h.env.Range(func(k, v string) bool {
		st.pairs = append(st.pairs, k, v)
		return true
	})
	copied = true
}

// preloadLocked makes sure the map can still be read once Envoy has it back.
// An SDK map is copied now; any other map (a test fake, the SDK through its
// methods) is asked to copy itself, as the SDK's map does on a read, and moe's
// copy of it is made on moe's first read: a chain whose plugins read nothing
// later then pays nothing more than the map's own copy.
func (h *headerMap) preloadLocked() {
	if h.st != nil && h.st.pairs != nil {
		return
	}
	if abi := h.abiLocked(); abi.Valid() {
		h.copyLocked(h.stateLocked(), abi, "copy")
		return
	}
	h.env.Get(":path")
}

// envoyError is the *StreamError for a failed C call: the request ended, or
// Envoy no longer lets Go have the map.
func (h *headerMap) envoyError(op string, err error) error {
	e := api.ErrUnavailable
	if st, ok := err.(envoyabi.Status); ok && st.Gone() {
		e = api.ErrDestroyed
	}
	return &api.StreamError{Op: h.kind.String() + " " + op, Err: e}
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

// firstLocked returns k's first value as the plugin sees it (pending writes
// applied).
func (h *headerMap) firstLocked(k string) (string, bool) {
	if h.st != nil {
		if vs, ok := h.st.pending(k); ok {
			if len(vs) == 0 {
				return "", false
			}
			return vs[0], true
		}
	}
	pairs := h.loadLocked("Get").pairs
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i] == k {
			return pairs[i+1], true
		}
	}
	return "", false
}

// envoyValues returns k's values in the copy of Envoy's map. A single value
// is a slice of pairs (no allocation): callers that keep it mark st.shared.
func envoyValues(pairs []string, k string) []string {
	first, n := -1, 0
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i] == k {
			if first < 0 {
				first = i + 1
			}
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case 1:
		return pairs[first : first+1 : first+1]
	}
	vs := make([]string, 0, n)
	for i := first - 1; i < len(pairs); i += 2 {
		if pairs[i] == k {
			vs = append(vs, pairs[i+1])
		}
	}
	return vs
}

// valuesLocked returns k's values as the plugin sees them; the slice must
// not be changed, and it may share pairs (see shared).
func (h *headerMap) valuesLocked(k, op string) []string {
	if h.st != nil {
		if vs, ok := h.st.pending(k); ok {
			return vs
		}
	}
	st := h.loadLocked(op)
	return envoyValues(st.pairs, k)
}

func (h *headerMap) Get(key string) (string, bool) {
	k := api.LowerKey(key)
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if err := h.check("Get", false); err != nil {
		panic(err)
	}
	return h.firstLocked(k)
}

func (h *headerMap) Values(key string) []string {
	k := api.LowerKey(key)
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if err := h.check("Values", false); err != nil {
		panic(err)
	}
	vs := h.valuesLocked(k, "Values")
	if len(vs) == 0 {
		return nil
	}
	// No copy: the API says callers must not modify the slice, and this map
	// never changes one it handed out (pending writes get a new slice on
	// every Set/Add; pairs are replaced, not changed, once shared). The
	// capacity is clipped so that a caller's append reallocates.
	h.st.shared = true
	return vs[:len(vs):len(vs)]
}

func (h *headerMap) setLocked(k string, vs []string) {
	h.stateLocked().setPending(k, vs)
	h.routeDirty = true
}

func (h *headerMap) changed(k string) bool {
	if h.st == nil {
		return false
	}
	_, ok := h.st.pending(k)
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
	old := h.valuesLocked(k, "Add")
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
func (h *headerMap) snapshotLocked(op string) []kv {
	st := h.loadLocked(op)
	out := make([]kv, 0, len(st.pairs)/2+len(st.writes))
	for i := 0; i < len(st.pairs); i += 2 {
		if !h.changed(st.pairs[i]) {
			out = append(out, kv{st.pairs[i], st.pairs[i+1]})
		}
	}
	for _, p := range st.writes {
		for _, v := range p.values {
			out = append(out, kv{p.key, v})
		}
	}
	return out
}

// Range iterates over a snapshot, so f may call the map's other methods.
// Entries come in Envoy's order, then the changes not yet sent in the order
// first made.
func (h *headerMap) Range(f func(key, value string) bool) {
	pairs, snap := h.rangeSnapshot()
	for i := 0; i < len(pairs); i += 2 {
		if !f(pairs[i], pairs[i+1]) {
			return
		}
	}
	for _, p := range snap {
		if !f(p.k, p.v) {
			return
		}
	}
}

// rangeSnapshot is what Range iterates, taken under the lock: the copy
// itself when nothing is pending (it is never changed in place again once
// shared), else a snapshot with the pending changes applied.
func (h *headerMap) rangeSnapshot() ([]string, []kv) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if err := h.check("Range", false); err != nil {
		panic(err)
	}
	st := h.loadLocked("Range")
	if len(st.writes) > 0 {
		return nil, h.snapshotLocked("Range")
	}
	st.shared = true
	return st.pairs, nil
}

func (h *headerMap) Len() int {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if err := h.check("Len", false); err != nil {
		panic(err)
	}
	st := h.loadLocked("Len")
	n := 0
	for i := 0; i < len(st.pairs); i += 2 {
		k := st.pairs[i]
		if !h.changed(k) && !seenBefore(st.pairs, i) {
			n++
		}
	}
	for _, p := range st.writes {
		if len(p.values) > 0 {
			n++
		}
	}
	return n
}

// seenBefore reports whether the key at pairs[i] occurs earlier in pairs
// (Envoy keeps a header's values where they were added, not always together).
func seenBefore(pairs []string, i int) bool {
	for j := 0; j < i; j += 2 {
		if pairs[j] == pairs[i] {
			return true
		}
	}
	return false
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
	for _, p := range h.snapshotLocked("replace") {
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

// flushLocked writes pending changes to Envoy and applies them to the copy.
// It returns the number of Envoy write calls made (tests assert on it).
func (h *headerMap) flushLocked() int {
	st := h.st
	if st == nil || len(st.writes) == 0 || h.env == nil || !h.writable {
		return 0
	}
	// Copy first: Envoy sizes a copy by the counts it announced with the map,
	// which the writes below change; the copy also says what Envoy has.
	h.loadLocked("flush")
	writes := 0
	for _, p := range st.writes {
		cur := envoyValues(st.pairs, p.key)
		if equalValues(cur, p.values) {
			continue
		}
		writes += h.writeLocked(st, p.key, p.values)
		if cur == nil && !isPseudo(p.key) {
			// A new header goes last: appending changes no entry a handed-out
			// slice of pairs can see, shared or not.
			for _, v := range p.values {
				st.pairs = append(st.pairs, p.key, v)
			}
			continue
		}
		st.replace(p.key, p.values)
	}
	clear(st.writes)
	st.writes = st.room[:0]
	return writes
}

// writeLocked makes Envoy's values of k vs (none: delete) and returns the
// number of calls it took. A failure panics; release recovers it.
func (h *headerMap) writeLocked(st *headerState, k string, vs []string) int {
	if !st.abi.Valid() {
		if len(vs) == 0 {
			h.env.Del(k)
			return 1
		}
		h.env.Set(k, vs[0])
		for _, v := range vs[1:] {
			h.env.Add(k, v)
		}
		return len(vs)
	}
	var err error
	if len(vs) == 0 {
		err = st.abi.Remove(k)
	} else {
		err = st.abi.Set(k, vs[0], false)
		for _, v := range vs[1:] {
			if err == nil {
				err = st.abi.Set(k, v, true)
			}
		}
	}
	if err != nil {
		panic(h.envoyError("flush", err))
	}
	return max(len(vs), 1)
}

// replace makes the copy hold vs as k's values where Envoy now has them:
// Envoy's setCopy removes every entry of the key and adds the new one last,
// a pseudo-header after the other pseudo-headers (HeaderMapImpl::setCopy and
// insertByKey, source/common/http/header_map_impl.cc).
func (st *headerState) replace(k string, vs []string) {
	pairs := st.pairs
	if st.shared {
		pairs = make([]string, 0, len(st.pairs)+2*len(vs))
		pairs = append(pairs, st.pairs...)
		st.shared = false
	}
	out := pairs[:0] // removing only ever writes behind the reading position
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i] != k {
			out = append(out, pairs[i], pairs[i+1])
		}
	}
	clear(pairs[len(out):]) // no stale strings past the end
	at := len(out)
	if isPseudo(k) {
		at = 0
		for at < len(out) && isPseudo(out[at]) {
			at += 2
		}
	}
	n := 2 * len(vs)
	out = slices.Grow(out, n)[:len(out)+n]
	copy(out[at+n:], out[at:]) // the entries after at move n places on
	for j, v := range vs {
		out[at+2*j], out[at+2*j+1] = k, v
	}
	st.pairs = out
}

func isPseudo(k string) bool { return len(k) > 0 && k[0] == ':' }

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
