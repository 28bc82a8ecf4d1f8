package limitcount

import (
	"context"
	"sync"
	"time"
)

// localStore is the failure_policy "local" fallback: while Redis fails, each
// instance counts alone, fixed windows aligned on its own clock, with the
// configured count (so N instances admit up to N x count in the outage: looser
// than the cluster-wide limit, but bounded, unlike fail_open). It is written
// by hand because it is a dozen lines of a map and a mutex; a general cache
// library would add nothing.
type localStore struct {
	limit  int64
	window time.Duration
	now    func() time.Time

	mu    sync.Mutex
	idx   int64 // window index of the counts below
	count map[string]int64
}

// maxLocalKeys bounds the fallback's memory when keys are many (one entry per
// key per window): past it, the window's counts start over.
const maxLocalKeys = 100_000

func newLocalStore(limit int64, window time.Duration) *localStore {
	return &localStore{limit: limit, window: window, now: time.Now, count: map[string]int64{}}
}

func (s *localStore) take(_ context.Context, key string) (decision, error) {
	now := s.now().UnixNano()
	w := int64(s.window)
	idx := now / w
	resetMS := (w - now%w + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	s.mu.Lock()
	if idx != s.idx || len(s.count) >= maxLocalKeys {
		s.idx = idx
		clear(s.count)
	}
	n := s.count[key]
	if n >= s.limit {
		s.mu.Unlock()
		return decision{resetMS: resetMS, retryMS: resetMS}, nil
	}
	n++
	s.count[key] = n
	s.mu.Unlock()
	return decision{allowed: true, remaining: s.limit - n, resetMS: resetMS}, nil
}
