package limitreq

import (
	"hash/maphash"
	"strings"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// bucketCache maps keys to token buckets with a hard cap on the number of
// keys. It is split into shards, each an LRU under its own mutex, so two
// workers rarely wait on each other; the least recently used key of a shard is
// dropped when the shard is full. Dropping a key forgets its state: the key
// starts again with a full bucket. The LRU keeps busy (likely limited) keys
// and drops idle ones, whose buckets have mostly refilled anyway.
type bucketCache struct {
	seed    maphash.Seed
	shards  []shard
	mask    uint64
	newFn   func() *rate.Limiter
	onEvict func()
}

type shard struct {
	mu  sync.Mutex
	lru *simplelru.LRU[string, *rate.Limiter]
	_   [40]byte // keep shards' mutexes on separate cache lines
}

// newBucketCache holds at most maxKeys buckets in total.
func newBucketCache(maxKeys int, newFn func() *rate.Limiter, onEvict func()) *bucketCache {
	n := 1
	// Shards only when each still holds a useful number of keys, so the cap
	// stays close to LRU order overall.
	for n < 16 && maxKeys/(n*2) >= 256 {
		n *= 2
	}
	c := &bucketCache{seed: maphash.MakeSeed(), shards: make([]shard, n), mask: uint64(n - 1), newFn: newFn, onEvict: onEvict}
	per := maxKeys / n
	for i := range c.shards {
		size := per
		if i < maxKeys%n {
			size++
		}
		l, err := simplelru.NewLRU[string, *rate.Limiter](size, func(string, *rate.Limiter) { c.onEvict() })
		if err != nil { // only for size <= 0, excluded by Validate
			panic(err)
		}
		c.shards[i].lru = l
	}
	return c
}

// get returns the bucket of key, creating it (and evicting the least
// recently used key of its shard when full). Only a miss allocates.
func (c *bucketCache) get(key string) *rate.Limiter {
	s := &c.shards[maphash.String(c.seed, key)&c.mask]
	s.mu.Lock()
	l, ok := s.lru.Get(key)
	if !ok {
		l = c.newFn()
		// Copy the key: it may point into a larger request buffer we must
		// not keep alive.
		s.lru.Add(strings.Clone(key), l)
	}
	s.mu.Unlock()
	return l
}

// len is the number of keys held.
func (c *bucketCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.lru.Len()
		s.mu.Unlock()
	}
	return n
}
