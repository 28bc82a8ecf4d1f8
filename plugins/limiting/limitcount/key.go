package limitcount

import (
	"crypto/sha256"
	"encoding/hex"
)

// maxRawKey: longer rendered keys (a huge header value) are stored by hash,
// so a client cannot make Redis keep large keys.
const maxRawKey = 200

// redisKey is "<prefix>{<key>}:<f|s><window ms>". The braces make the key its
// own Redis Cluster hash tag; the suffix separates fixed from sliding counters
// (different Redis types) and windows of different lengths.
func (c *Config) redisKey(key string) string {
	if len(key) > maxRawKey {
		sum := sha256.Sum256([]byte(key))
		key = "sha256:" + hex.EncodeToString(sum[:16])
	}
	return c.KeyPrefix + "{" + key + c.keySuffix
}
