package debug

import (
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/secret"
)

// compiled is what Init builds once per config version.
type compiled struct {
	header, responseHeader string
	// secretSum is the digest of the secret: requests compare digests, so
	// the compare takes the same time whatever the length of a guess.
	secretSum secret.Digest
	enabled   bool // header debugging on
	slow      time.Duration

	tracedCount, badSecret, slowRequests api.Counter
}

func (c *Config) Init(env api.ConfigEnv) error {
	c.header = strings.ToLower(c.Header)
	c.responseHeader = strings.ToLower(c.ResponseHeader)
	c.enabled = c.Secret != ""
	if c.enabled {
		c.secretSum = secret.DigestOf(c.Secret)
	}
	c.slow = c.SlowThreshold.D()
	m := env.Metrics()
	c.tracedCount = m.Counter("traced")
	c.badSecret = m.Counter("bad_secret")
	c.slowRequests = m.Counter("slow_requests")
	return nil
}
