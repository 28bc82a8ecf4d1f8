package basicauth

import (
	"context"
	"crypto/sha256"
	"sync"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
	"github.com/moeproxy/moe/shared/secret"
)

// users is the credential table of one config version.
type users struct {
	byName map[string]*user
	hashed bool // some user has a password hash (see Config.Needs)
	cache  *verifiedCache
	sem    chan struct{} // bounds concurrent hash verifications
	// dummy is compared against for unknown users of plain-password configs, so
	// "no such user" and "wrong password" take the same time.
	dummy secret.Digest
}

type user struct {
	consumer *api.Consumer
	plain    *secret.Digest // digest of the clear-text password, or
	hash     passwordHash   // a bcrypt/argon2id hash
}

// buildUsers indexes every entry (own and chain consumers) by user name. It
// refuses a user name used twice and a consumer name that cannot be a user
// name (the default), naming the entry's field (consumers[1].username or
// consumers[3].auth.basic-auth.username).
func buildUsers(entries []consumer.Entry[Credential], cacheSize, concurrency int, cacheKey [32]byte) (*users, error) {
	u := &users{byName: make(map[string]*user, len(entries)), sem: make(chan struct{}, concurrency)}
	u.dummy = secret.DigestOf("moe basic-auth: no such user")
	where := make(map[string]string, len(entries))
	for _, en := range entries {
		cred := en.Credential
		name := cred.userID(en.Consumer)
		field := api.Field(en.Field, "username")
		if err := checkUserID(name); err != nil {
			// Only a consumer name can get here: a username was checked by Validate.
			return nil, api.FieldErrorf(field, "the consumer name is the user name when username is not set, and it %v; set username", err)
		}
		if other, dup := where[name]; dup {
			return nil, api.FieldErrorf(field, "user %q is also %s", name, other)
		}
		where[name] = en.Field
		e := &user{consumer: en.Consumer}
		if cred.PasswordHash != "" {
			h, err := parseHash(cred.PasswordHash) // validated already
			if err != nil {
				return nil, api.FieldErrorf(api.Field(en.Field, "password_hash"), "%v", err)
			}
			e.hash = h
			u.hashed = true
		} else {
			d := secret.DigestOf(cred.Password)
			e.plain = &d
		}
		u.byName[name] = e
	}
	if u.hashed && cacheSize > 0 {
		u.cache = newVerifiedCache(cacheSize, cacheKey)
	}
	return u, nil
}

// verify returns the consumer for (name, password), nil when they do not
// match. ok=false means the request ended while waiting for a hash slot.
func (u *users) verify(ctx context.Context, name, password []byte) (c *api.Consumer, ok bool) {
	if u == nil {
		return nil, true // a per-route config without consumers and no parent to inherit from
	}
	e := u.byName[string(name)] // no allocation: the compiler looks up []byte keys in place
	if e == nil {
		// Plain passwords: spend the same digest + compare as a known user.
		// Hashed users: do not burn a bcrypt per unknown name (that would hand
		// attackers a CPU amplifier); user names are not secrets.
		d := secret.DigestOfBytes(password)
		secret.EqualDigest(&d, &u.dummy)
		return nil, true
	}
	if e.plain != nil {
		d := secret.DigestOfBytes(password)
		if secret.EqualDigest(&d, e.plain) {
			return e.consumer, true
		}
		return nil, true
	}
	var ck cacheKey
	if u.cache != nil {
		ck = u.cache.key(name, password)
		if u.cache.get(ck) == e {
			return e.consumer, true
		}
	}
	select {
	case u.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, false
	}
	// Copy for the interface call, so the caller's stack buffer does not escape
	// to the heap on the fast paths above (this path costs milliseconds anyway).
	good := e.hash.verify(append([]byte(nil), password...))
	<-u.sem
	if !good {
		return nil, true
	}
	if u.cache != nil {
		u.cache.put(ck, e)
	}
	return e.consumer, true
}

// cacheKey is HMAC-like keyed SHA-256 of (user, password): the cache never
// holds passwords, and since only successful verifications are stored and the
// key covers the password, a wrong password can never hit an entry.
type cacheKey [sha256.Size]byte

// verifiedCache is a bounded set of verified credentials with FIFO eviction.
// A hand-written ring + map: the job is small and a dependency (an LRU
// library) would not buy anything a FIFO does not give here.
type verifiedCache struct {
	secret [32]byte // random per config version
	mu     sync.RWMutex
	m      map[cacheKey]*user
	ring   []cacheKey
	next   int
}

func newVerifiedCache(size int, secret [32]byte) *verifiedCache {
	return &verifiedCache{secret: secret, m: make(map[cacheKey]*user, size), ring: make([]cacheKey, size)}
}

func (c *verifiedCache) key(name, password []byte) cacheKey {
	// secret || len(name) || name || password on the stack for usual sizes.
	var buf [512]byte
	b := append(buf[:0], c.secret[:]...)
	b = append(b, byte(len(name)>>8), byte(len(name)))
	b = append(b, name...)
	b = append(b, password...)
	return sha256.Sum256(b)
}

func (c *verifiedCache) get(k cacheKey) *user {
	c.mu.RLock()
	e := c.m[k]
	c.mu.RUnlock()
	return e
}

func (c *verifiedCache) put(k cacheKey, e *user) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return
	}
	if old := c.ring[c.next]; len(c.m) >= len(c.ring) {
		delete(c.m, old)
	}
	c.ring[c.next] = k
	c.next = (c.next + 1) % len(c.ring)
	c.m[k] = e
}
