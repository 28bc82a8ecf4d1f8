package authn

import (
	"crypto/sha256"
	"crypto/subtle"
)

// Digest is the SHA-256 of a secret, kept instead of (or next to) the secret so
// that compares do not depend on where two secrets first differ.
type Digest [sha256.Size]byte

// DigestOf hashes s without allocating.
func DigestOf(s string) Digest { return sha256.Sum256([]byte(s)) }

// EqualDigest compares two digests in constant time.
func EqualDigest(a, b *Digest) bool { return subtle.ConstantTimeCompare(a[:], b[:]) == 1 }
