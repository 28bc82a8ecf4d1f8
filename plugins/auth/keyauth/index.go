package keyauth

import (
	"crypto/sha256"
	"crypto/subtle"

	"github.com/moeproxy/moe/shared/api"
)

// keyIndex finds the consumer of an API key.
//
// Why a digest index and not map[key]consumer: a Go map compares keys with an
// early-exit memory compare, so the time a lookup takes depends on how many
// leading bytes of a guess match a real key, which is the classic timing
// oracle. Indexing by SHA-256(key) moves that early exit onto digests: a guess
// that shares a digest prefix with a real key tells an attacker nothing about
// the key itself (preimage resistance). The candidate is then confirmed with
// subtle.ConstantTimeCompare on the full key, so the decision itself never
// takes an early exit on secret bytes.
type keyIndex struct {
	m map[[sha256.Size]byte]*entry
}

type entry struct {
	key      []byte
	consumer *api.Consumer
}

func buildIndex(consumers []Consumer) *keyIndex {
	ix := &keyIndex{m: make(map[[sha256.Size]byte]*entry)}
	for i := range consumers {
		c := consumers[i].Consumer()
		for _, k := range consumers[i].Keys {
			ix.m[sha256.Sum256([]byte(k))] = &entry{key: []byte(k), consumer: c}
		}
	}
	return ix
}

// lookup returns the consumer of key, nil if none.
func (ix *keyIndex) lookup(key string) *api.Consumer {
	if ix == nil {
		return nil
	}
	e := ix.m[sha256.Sum256([]byte(key))]
	if e == nil {
		return nil
	}
	if subtle.ConstantTimeCompare(e.key, []byte(key)) != 1 {
		return nil
	}
	return e.consumer
}
