package basicauth

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// passwordHash verifies a password against a stored hash.
type passwordHash interface {
	verify(password []byte) bool
}

type bcryptHash []byte

func (h bcryptHash) verify(p []byte) bool {
	return bcrypt.CompareHashAndPassword(h, p) == nil
}

// argon2idHash is a parsed PHC string: $argon2id$v=19$m=<KiB>,t=<iter>,p=<lanes>$<salt>$<hash>
// (salt and hash in unpadded standard base64), the format of the argon2
// reference tool and of most libraries.
type argon2idHash struct {
	time, memory uint32
	threads      uint8
	salt, key    []byte
}

func (h *argon2idHash) verify(p []byte) bool {
	k := argon2.IDKey(p, h.salt, h.time, h.memory, h.threads, uint32(len(h.key)))
	return subtle.ConstantTimeCompare(k, h.key) == 1
}

// Limits on argon2id parameters: a config must not be able to make one
// verification take gigabytes or seconds.
const (
	maxArgonMemoryKiB = 256 * 1024
	maxArgonTime      = 16
)

func parseHash(s string) (passwordHash, error) {
	switch {
	case strings.HasPrefix(s, "$2a$"), strings.HasPrefix(s, "$2b$"), strings.HasPrefix(s, "$2y$"):
		cost, err := bcrypt.Cost([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("malformed bcrypt hash: %v", err)
		}
		if cost > 14 {
			return nil, fmt.Errorf("bcrypt cost %d is too high for a proxy (at most 14)", cost)
		}
		return bcryptHash(s), nil
	case strings.HasPrefix(s, "$argon2id$"):
		return parseArgon2id(s)
	case strings.HasPrefix(s, "$argon2i$"), strings.HasPrefix(s, "$argon2d$"):
		return nil, fmt.Errorf("only argon2id is supported")
	}
	return nil, fmt.Errorf("unknown hash format (want bcrypt $2a$/$2b$/$2y$ or $argon2id$)")
}

func parseArgon2id(s string) (passwordHash, error) {
	parts := strings.Split(s, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, hash
	if len(parts) != 6 {
		return nil, fmt.Errorf("malformed argon2id hash (want $argon2id$v=19$m=..,t=..,p=..$salt$hash)")
	}
	if parts[2] != "v=19" {
		return nil, fmt.Errorf("unsupported argon2 version %q (want v=19)", parts[2])
	}
	h := &argon2idHash{}
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("malformed argon2id parameter %q", kv)
		}
		switch k {
		case "m":
			h.memory = uint32(n)
		case "t":
			h.time = uint32(n)
		case "p":
			if n > 255 {
				return nil, fmt.Errorf("argon2id p=%d is too large", n)
			}
			h.threads = uint8(n)
		default:
			return nil, fmt.Errorf("unknown argon2id parameter %q", k)
		}
	}
	switch {
	case h.memory == 0 || h.time == 0 || h.threads == 0:
		return nil, fmt.Errorf("argon2id needs m, t and p")
	case h.memory > maxArgonMemoryKiB:
		return nil, fmt.Errorf("argon2id m=%d KiB is too large (at most %d)", h.memory, maxArgonMemoryKiB)
	case h.time > maxArgonTime:
		return nil, fmt.Errorf("argon2id t=%d is too large (at most %d)", h.time, maxArgonTime)
	}
	var err error
	if h.salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil || len(h.salt) < 8 {
		return nil, fmt.Errorf("malformed argon2id salt")
	}
	if h.key, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil || len(h.key) < 16 {
		return nil, fmt.Errorf("malformed argon2id hash value")
	}
	return h, nil
}
