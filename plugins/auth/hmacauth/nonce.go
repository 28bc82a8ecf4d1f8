package hmacauth

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// nonceChecker records a (keyId, nonce) pair once: the replay check. Two
// stores implement it: nonceStore (this process) and redisNonces (shared by
// every instance using the same Redis).
type nonceChecker interface {
	// check records the pair as used until expires (the signing date plus
	// clock_skew: later the date check refuses the request anyway) and says
	// whether it was new.
	check(ctx api.Context, keyID, nonce string, now, expires time.Time) nonceResult
}

type nonceResult int

const (
	nonceFresh       nonceResult = iota // first use: go on
	nonceReplay                         // seen before inside the window: 401
	nonceFull                           // memory store full of live nonces: 503
	nonceUnavailable                    // Redis failed under fail_closed: failure_status
)

// nonceStore remembers (keyId, nonce) pairs until they can no longer pass the
// date check, so a captured request cannot be replayed.
//
// It is process-wide on purpose: each xDS update builds a new config, and a
// cache per config would forget every nonce seen so far, reopening the replay
// window on every update; filter-level and per-route configs must also refuse
// each other's nonces. Memory is bounded: each shard holds at most cap/shards
// entries in insertion order, expired ones are dropped from the front. When a
// shard is full of live entries, add reports full and the request is refused
// (fail closed) instead of evicting a live nonce, which would allow a replay.
type nonceStore struct {
	shards [nonceShards]nonceShard
}

const nonceShards = 64

type nonceID [16]byte

type nonceEntry struct {
	id      nonceID
	expires int64 // unix nanoseconds
}

type nonceShard struct {
	mu   sync.Mutex
	max  int
	m    map[nonceID]int64
	fifo []nonceEntry // ring buffer in insertion order
	head int
	n    int
}

var (
	noncesOnce sync.Once
	nonces     *nonceStore
)

// sharedNonces returns the process-wide store, resized to the latest
// configured capacity.
func sharedNonces(capacity int) *nonceStore {
	noncesOnce.Do(func() { nonces = &nonceStore{} })
	nonces.resize(capacity)
	return nonces
}

func newNonceStore(capacity int) *nonceStore {
	s := &nonceStore{}
	s.resize(capacity)
	return s
}

func (s *nonceStore) resize(capacity int) {
	per := (capacity + nonceShards - 1) / nonceShards
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		if sh.m == nil {
			sh.m = make(map[nonceID]int64)
		}
		sh.max = per
		sh.mu.Unlock()
	}
}

func nonceKey(keyID, nonce string) nonceID {
	var buf [512]byte
	b := append(buf[:0], keyID...)
	b = append(b, 0)
	b = append(b, nonce...)
	sum := sha256.Sum256(b)
	var id nonceID
	copy(id[:], sum[:])
	return id
}

func (s *nonceStore) check(_ api.Context, keyID, nonce string, now, expires time.Time) nonceResult {
	switch replay, full := s.add(keyID, nonce, now, expires); {
	case replay:
		return nonceReplay
	case full:
		return nonceFull
	}
	return nonceFresh
}

// add records the pair until expires. It returns replay=true when the pair is
// already there and live, full=true when there is no room.
func (s *nonceStore) add(keyID, nonce string, now, expires time.Time) (replay, full bool) {
	id := nonceKey(keyID, nonce)
	sh := &s.shards[id[0]%nonceShards]
	t := now.UnixNano()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if exp, ok := sh.m[id]; ok && exp >= t {
		return true, false
	}
	// Drop expired entries from the front (insertion order; lifetimes are
	// similar, so this keeps the map close to the live set).
	for sh.n > 0 {
		e := sh.fifo[sh.head]
		if e.expires >= t && sh.n < sh.max {
			break
		}
		if e.expires >= t {
			// Full of live entries (max may have shrunk): refuse.
			return false, true
		}
		if exp, ok := sh.m[e.id]; ok && exp == e.expires {
			delete(sh.m, e.id)
		}
		sh.head = (sh.head + 1) % len(sh.fifo)
		sh.n--
	}
	if sh.n >= sh.max {
		return false, true
	}
	if sh.n == len(sh.fifo) {
		sh.grow()
	}
	sh.fifo[(sh.head+sh.n)%len(sh.fifo)] = nonceEntry{id: id, expires: expires.UnixNano()}
	sh.n++
	sh.m[id] = expires.UnixNano()
	return false, false
}

// grow doubles the ring (up to max), keeping order; memory follows use.
func (sh *nonceShard) grow() {
	size := 2 * len(sh.fifo)
	if size < 64 {
		size = 64
	}
	if size > sh.max {
		size = sh.max
	}
	nf := make([]nonceEntry, size)
	for i := 0; i < sh.n; i++ {
		nf[i] = sh.fifo[(sh.head+i)%len(sh.fifo)]
	}
	sh.fifo, sh.head = nf, 0
}

// len is the number of entries (for tests).
func (s *nonceStore) len() int {
	n := 0
	for i := range s.shards {
		s.shards[i].mu.Lock()
		n += s.shards[i].n
		s.shards[i].mu.Unlock()
	}
	return n
}
