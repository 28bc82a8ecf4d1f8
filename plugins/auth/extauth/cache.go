package extauth

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/moeproxy/moe/shared/api"
)

// cache holds allow/deny results for ttl, bounded by a least-recently-used
// list (golang-lru). Expiry is checked on read rather than by golang-lru's
// expirable variant, which starts a cleanup goroutine it never stops: one
// would leak per config version.
type cache struct {
	lru *lru.Cache[[32]byte, cached]
	ttl time.Duration
}

type cached struct {
	res     *result
	expires int64 // unix nanos
}

func newCache(size int, ttl time.Duration) *cache {
	l, err := lru.New[[32]byte, cached](size)
	if err != nil {
		panic(err) // only for size <= 0, which Validate refuses
	}
	return &cache{lru: l, ttl: ttl}
}

func (c *cache) get(k [32]byte, now int64) (*result, bool) {
	e, ok := c.lru.Get(k)
	if !ok {
		return nil, false
	}
	if now >= e.expires {
		c.lru.Remove(k)
		return nil, false
	}
	return e.res, true
}

func (c *cache) add(k [32]byte, r *result, now int64) {
	c.lru.Add(k, cached{res: r, expires: now + int64(c.ttl)})
}

var keyBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// cacheKey hashes the key material with SHA-256, so the cache holds no
// credentials and a collision cannot hand one caller another's result. Each
// part is length-prefixed, so values cannot be shifted across parts.
//
// Besides the configured parts, the key always covers what the check request
// carries that the service may decide on: the host and scheme (sent as
// x-forwarded-host/-proto; one filter config usually serves several virtual
// hosts) and, with with_request_body, a digest of the body sent. Otherwise an
// answer for one host or body would be replayed for another.
func (rt *runtime) cacheKey(h api.RequestHeaderMap, body api.Buffer) [32]byte {
	bp := keyBufPool.Get().(*[]byte)
	b := (*bp)[:0]
	part := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	part(h.Host())
	part(h.Scheme())
	if rt.body != nil {
		var sent []byte
		if body != nil && body.Len() > 0 {
			sent = body.Bytes()
			if len(sent) > rt.body.MaxRequestBytes {
				sent = sent[:rt.body.MaxRequestBytes] // what check sends
			}
		}
		d := sha256.Sum256(sent)
		b = binary.AppendUvarint(b, uint64(len(sent)))
		b = append(b, d[:]...)
	}
	if rt.keyIncludesPath {
		part(h.Method())
		part(h.Path())
	}
	for _, name := range rt.keyHeaders {
		vs := h.Values(name)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			part(v)
		}
	}
	sum := sha256.Sum256(b)
	*bp = b
	if cap(b) <= 16<<10 {
		keyBufPool.Put(bp)
	}
	return sum
}
