// Package secret fingerprints secrets (API keys, passwords, shared tokens) so
// that plugins can index and compare them without timing leaks: key-auth's key
// index, basic-auth's clear-text passwords, the debug plugin's secret.
package secret

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"unsafe"

	"github.com/dchest/siphash"
)

// Digest is a keyed 128-bit fingerprint of a secret (SipHash-2-4 under a key
// drawn when the process starts), kept instead of or next to the secret so
// that compares and index lookups do not depend on where two secrets first
// differ.
//
// Why a keyed PRF and not SHA-256: both make the digest of a guess useless for
// learning a secret's bytes, SHA-256 by preimage resistance and SipHash
// because its output cannot be predicted without the key. SipHash was made
// for this job (short inputs, hash tables facing attackers) and is cheaper:
// for a 28-byte key on this project's AMD EPYC test machine, 23 ns against
// SHA-256's 86 ns with SHA instructions and 195 ns without them (most Intel
// server CPUs before Ice Lake), a cost key-auth and basic-auth pay on every
// request. Digests are compared only within the process that made them, so a
// per-process key is enough.
type Digest [16]byte

// digestKey is the SipHash key of this process. Global on purpose: every
// config version must map a secret to the same digest as the requests it
// serves, and nothing writes it after init.
var digestKey = func() [2]uint64 {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("secret: no randomness for the digest key: " + err.Error()) // crypto/rand does not fail on Linux
	}
	return [2]uint64{binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])}
}()

// DigestOf fingerprints s without allocating.
func DigestOf(s string) Digest {
	return DigestOfBytes(unsafe.Slice(unsafe.StringData(s), len(s))) // read only
}

// DigestOfBytes fingerprints b without allocating.
func DigestOfBytes(b []byte) Digest {
	var d Digest
	lo, hi := siphash.Hash128(digestKey[0], digestKey[1], b)
	binary.LittleEndian.PutUint64(d[:8], lo)
	binary.LittleEndian.PutUint64(d[8:], hi)
	return d
}

// EqualDigest compares two digests in constant time.
func EqualDigest(a, b *Digest) bool { return subtle.ConstantTimeCompare(a[:], b[:]) == 1 }
