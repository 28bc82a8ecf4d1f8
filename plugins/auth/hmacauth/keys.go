package hmacauth

import (
	"crypto/hmac"
	"hash"
	"sync"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// key is one signing key, with a pool of keyed HMAC states per algorithm so
// the request path does not rebuild them (hmac.New allocates and hashes the key).
type key struct {
	id       string
	consumer *api.Consumer
	pools    map[string]*sync.Pool
}

// buildKeys indexes the keys of every entry (own and chain consumers) by key
// id. A key id used twice is refused naming the entry's field
// (consumers[1].keys[0].key_id or consumers[3].auth.hmac-auth.keys[0].key_id)
// and the other place. Pools exist for every algorithm, not only the allowed
// ones, so a per-route config allowing another algorithm can share its
// parent's keys.
func buildKeys(entries []consumer.Entry[Credential]) (map[string]*key, error) {
	m := map[string]*key{}
	where := map[string]string{}
	for _, e := range entries {
		for j, k := range e.Credential.Keys {
			field := api.Field(e.Field, "keys", j, "key_id")
			if other, dup := where[k.KeyID]; dup {
				return nil, api.FieldErrorf(field, "key id %q is also %s", k.KeyID, other)
			}
			where[k.KeyID] = api.Field(e.Field, "keys", j)
			kk := &key{id: k.KeyID, consumer: e.Consumer, pools: map[string]*sync.Pool{}}
			secret := []byte(k.Secret)
			for a, newHash := range algorithms {
				kk.pools[a] = &sync.Pool{New: func() any { return &macState{mac: hmac.New(newHash, secret)} }}
			}
			m[k.KeyID] = kk
		}
	}
	return m, nil
}

// macState is a pooled keyed HMAC and the scratch space of one verification.
type macState struct {
	mac hash.Hash
	buf []byte // signing string
	sum []byte
	sig [96]byte // room for the base64 decode of a SHA-512 MAC (88 chars -> 66)
}
