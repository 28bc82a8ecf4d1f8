package filtermanager

import (
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/log"
)

// Request state shared across golang filters. Each golang filter of a request
// is a stream of its own in Go, so the consumer an auth plugin identified in
// one filter, and string values plugins stored with SetState, travel to later
// golang filters the way Envoy filters share request state: in the stream's
// filter state. They are written when the phase that set them hands the
// stream back (one crossing per value), and read lazily, once, by a later
// filter whose chain has not set them itself. Envoy's own access log can read
// them too: %FILTER_STATE(moe.consumer:PLAIN)%, %FILTER_STATE(moe.state.<key>:PLAIN)%.
const (
	// consumerKey holds the consumer as JSON ({"name":...,"group":...,"attributes":{...}}).
	consumerKey = "moe.consumer"
	// stateKeyPrefix + key holds a string value set with SetState.
	stateKeyPrefix = "moe.state."
)

// sharedState tracks the string state (SetState) waiting to be written and
// what was read. The consumer's two flags live in the stream itself
// (consumerDirty, consumerLoaded): every authenticated request has them, and
// there they cost no allocation.
type sharedState struct {
	dirtyKeys  []string // string state set since the last write
	loadedKeys map[string]bool
}

// sharedLocked returns the stream's shared state, allocating it on first use
// (most requests never set or read string state).
func (s *stream) sharedLocked() *sharedState {
	if s.shared == nil {
		s.shared = &sharedState{}
	}
	return s.shared
}

func (s *stream) setConsumer(plugin string, c *api.Consumer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.ch.Load()
	if c != nil && ch.defined != nil && c.Group == "" && len(c.Attributes) == 0 {
		// A plugin that only knows the name (ext-auth's service answered
		// "alice") gets the chain's definition of that consumer: its group and
		// attributes, as every plugin sees the same consumer.
		if def, ok := ch.defined[c.Name]; ok {
			c = def
		}
	}
	s.consumer = c
	if c != nil && ch.observes { // the reason is built only when someone reads it
		s.decideLocked(api.Decision{Plugin: plugin, Allowed: true, Reason: "consumer " + c.Name})
	}
	s.consumerDirty, s.consumerLoaded = true, true
	if c != nil && ch.byConsumer != nil && s.dec.active {
		s.switchTo.Store(ch.byConsumer[c.Name])
	}
}

func (s *stream) getConsumer() *api.Consumer {
	s.mu.Lock()
	c, tried := s.consumer, s.consumerLoaded
	readable := s.ownedLocked() && !s.destroyed
	s.mu.Unlock()
	if c != nil || tried || !readable {
		return c
	}
	// Outside the lock: from a goroutine the SDK waits for Envoy's worker
	// thread, which may need the lock meanwhile.
	v, ok := s.readFilterState(consumerKey)
	var loaded *api.Consumer
	if ok && v != "" {
		if loaded = s.ch.Load().decoded.of(v); loaded == nil {
			log.Printf(envoy.Warn, "", s.requestID(), "ignoring malformed %s filter state", consumerKey)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.consumerLoaded { // a plugin may have set one meanwhile
		s.consumer, s.consumerLoaded = loaded, ok
	}
	return s.consumer
}

func (s *stream) setState(key string, value any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		s.state = make(map[string]any, 4)
	}
	s.state[key] = value
	if _, ok := value.(string); ok {
		sh := s.sharedLocked()
		if !slices.Contains(sh.dirtyKeys, key) {
			sh.dirtyKeys = append(sh.dirtyKeys, key)
		}
		s.markLoadedLocked(key)
	}
}

func (s *stream) getState(key string) (any, bool) {
	s.mu.Lock()
	v, ok := s.state[key]
	tried := s.shared != nil && s.shared.loadedKeys[key]
	readable := s.ownedLocked() && !s.destroyed
	s.mu.Unlock()
	if ok || tried || !readable {
		return v, ok
	}
	sv, found := s.readFilterState(stateKeyPrefix + key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, set := s.state[key]; set {
		return cur, true
	}
	if found {
		s.markLoadedLocked(key)
	}
	if sv == "" {
		return nil, false
	}
	if s.state == nil {
		s.state = make(map[string]any, 4)
	}
	s.state[key] = sv
	return sv, true
}

func (s *stream) markLoadedLocked(key string) {
	sh := s.sharedLocked()
	if sh.loadedKeys == nil {
		sh.loadedKeys = make(map[string]bool, 4)
	}
	sh.loadedKeys[key] = true
}

// readFilterState reads a filter state string; ok is false when the SDK call
// failed (the phase ended meanwhile), so a later call may try again. An absent
// key reads as "".
func (s *stream) readFilterState(key string) (v string, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			v, ok = "", false
		}
	}()
	return s.cb.StreamInfo().FilterState().GetString(key), true
}

// shareLocked writes what changed to the filter state, when a phase hands the
// stream back. Writes from a goroutine are posted to the worker by the SDK
// and do not wait.
func (s *stream) shareLocked() {
	sh := s.shared
	stringsDirty := sh != nil && len(sh.dirtyKeys) > 0
	if !s.consumerDirty && !stringsDirty {
		return
	}
	if s.consumerDirty {
		s.consumerDirty = false
		s.setFilterStateLocked(consumerKey, s.ch.Load().encoded.of(s.consumer))
	}
	if !stringsDirty {
		return
	}
	for _, k := range sh.dirtyKeys {
		if v, ok := s.state[k].(string); ok {
			s.setFilterStateLocked(stateKeyPrefix+k, v)
		}
	}
	sh.dirtyKeys = sh.dirtyKeys[:0]
}

// setFilterStateLocked writes one mutable string for the rest of the filter
// chain, at the C ABI (the SDK's FilterState() allocates a wrapper per call)
// or through the SDK for a test fake. A failure panics, as the SDK's does.
func (s *stream) setFilterStateLocked(key, value string) {
	if r := s.abiLocked(); r.Valid() {
		if err := r.SetStringFilterState(key, value, int(envoy.StateTypeMutable), int(envoy.LifeSpanFilterChain), int(envoy.None)); err != nil {
			panic(err)
		}
		return
	}
	s.cb.StreamInfo().FilterState().SetString(key, value, envoy.StateTypeMutable, envoy.LifeSpanFilterChain, envoy.None)
}

// consumerEncodings caches the JSON of the consumers a chain's plugins
// identify. Consumers defined in config are the same few pointers request
// after request; a plugin that builds one per request (ext-auth, jwt-auth
// naming consumers after a claim) would fill the cache, so it stops growing
// at maxCachedConsumers and the rest are encoded each time.
type consumerEncodings struct {
	cache boundedCache[*api.Consumer, string]
}

func (e *consumerEncodings) of(c *api.Consumer) string {
	if c == nil {
		return ""
	}
	if v, ok := e.cache.load(c); ok {
		return v
	}
	b, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	return e.cache.store(c, string(b))
}

// consumerDecodings caches the consumers a chain read from the filter state
// (a consumer an earlier golang filter identified), by their JSON: the same
// few consumers arrive request after request, and decoding one costs more
// than the rest of reading it (encoding/json, a map and three strings; ~4.4k
// instructions a request in make bench's B4). Consumers are immutable
// (api.Consumer), so requests share them. Bounded like consumerEncodings;
// malformed JSON is not cached (it is logged each time).
type consumerDecodings struct {
	cache boundedCache[string, *api.Consumer]
}

// of returns the consumer v encodes, or nil when v is not a consumer's JSON.
func (d *consumerDecodings) of(v string) *api.Consumer {
	if c, ok := d.cache.load(v); ok {
		return c
	}
	c := &api.Consumer{}
	if err := json.Unmarshal([]byte(v), c); err != nil || c.Name == "" {
		return nil
	}
	return d.cache.store(v, c)
}

// maxCachedConsumers bounds each of a chain's two consumer caches.
const maxCachedConsumers = 4096

// boundedCache is a concurrent map that stops growing at maxCachedConsumers
// entries; past that, store keeps nothing and the caller's value is used once.
type boundedCache[K comparable, V any] struct {
	m sync.Map // K -> V
	n atomic.Int32
}

func (c *boundedCache[K, V]) load(k K) (V, bool) {
	v, ok := c.m.Load(k)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// store caches v under k while there is room and returns the value to use:
// the one another goroutine stored first, or v.
func (c *boundedCache[K, V]) store(k K, v V) V {
	if c.n.Load() >= maxCachedConsumers {
		return v
	}
	if prev, loaded := c.m.LoadOrStore(k, v); loaded {
		return prev.(V)
	}
	c.n.Add(1)
	return v
}
