package keyauth

import (
	"crypto/subtle"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
	"github.com/moeproxy/moe/shared/secret"
)

// keyIndex finds the consumer of an API key.
//
// Why a digest index and not map[key]consumer: a Go map compares keys with an
// early-exit memory compare, so the time a lookup takes depends on how many
// leading bytes of a guess match a real key, which is the classic timing
// oracle. Indexing by secret.DigestOf(key), a keyed PRF, moves that early exit
// onto digests an attacker cannot compute: a guess that shares a digest prefix
// with a real key tells them nothing about the key itself. The candidate is
// then confirmed with subtle.ConstantTimeCompare on the full key, so the
// decision itself never takes an early exit on secret bytes.
type keyIndex struct {
	m map[secret.Digest]*entry
}

type entry struct {
	key      []byte
	consumer *api.Consumer
}

// buildIndex indexes every key of every entry (own and chain consumers). It
// refuses a key longer than maxKey and a key used twice, naming the entry's
// field (consumers[1].keys[0] or consumers[3].auth.key-auth.keys[0]) and the
// other place, never the key itself: config errors end up in logs.
func buildIndex(entries []consumer.Entry[Credential], maxKey int) (*keyIndex, error) {
	ix := &keyIndex{m: make(map[secret.Digest]*entry)}
	where := map[secret.Digest]string{}
	for _, e := range entries {
		for j, k := range e.Credential.Keys {
			field := api.Field(e.Field, "keys", j)
			if len(k) > maxKey {
				return nil, api.FieldErrorf(field, "longer than max_key_bytes (%d)", maxKey)
			}
			d := secret.DigestOf(k)
			if other, dup := where[d]; dup {
				return nil, api.FieldErrorf(field, "same key as %s (keys must be unique)", other)
			}
			where[d] = field
			ix.m[d] = &entry{key: []byte(k), consumer: e.Consumer}
		}
	}
	return ix, nil
}

// lookup returns the consumer of key, nil if none.
func (ix *keyIndex) lookup(key string) *api.Consumer {
	if ix == nil {
		return nil
	}
	e := ix.m[secret.DigestOf(key)]
	if e == nil {
		return nil
	}
	if subtle.ConstantTimeCompare(e.key, []byte(key)) != 1 {
		return nil
	}
	return e.consumer
}
