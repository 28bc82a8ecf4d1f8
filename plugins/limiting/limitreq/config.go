package limitreq

import (
	"math"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// Config of the limit-req plugin. See README.md for the reference.
type Config struct {
	// Rate is the sustained number of requests per second per key (> 0;
	// fractions allowed: 0.5 is one request every two seconds).
	Rate float64 `json:"rate"`
	// Burst is the bucket size: how many requests a key may send at once after
	// being idle (>= 1). Default 1: strictly spaced requests.
	Burst int `json:"burst"`
	// Key is the template naming the bucket, e.g. "$remote_addr",
	// "$consumer", "$header_x-user" or "$route_name:$consumer".
	// (A string compiled in Validate rather than a variables.Template field, so
	// a bad template is reported with the field name.)
	Key string `json:"key"`
	// EmptyKey is what to do when the key renders empty (header absent, no
	// consumer): "shared" (default: all such requests share one bucket) or
	// "reject" (answer EmptyKeyStatus).
	EmptyKey       string `json:"empty_key"`
	EmptyKeyStatus int    `json:"empty_key_status"`
	// MaxDelay > 0 lets a request that finds the bucket empty wait up to this
	// long for its turn (nginx limit_req without nodelay) instead of being
	// rejected at once. Waiting happens off Envoy's worker thread.
	MaxDelay api.Duration `json:"max_delay"`
	// MaxKeys caps the number of buckets kept (least recently used are
	// dropped), so a flood of distinct keys cannot grow memory without bound.
	MaxKeys int `json:"max_keys"`
	// Status and Message of the rejection; Retry-After is added.
	Status  int    `json:"status"`
	Message string `json:"message"`

	key          *variables.Template
	rt           *state
	replyHdr     []string // reply content type, shared (the framework copies reply headers)
	emptyKeyHdrs api.Headers
	rejectHdrs   [11]api.Headers // by Retry-After seconds 0..10
}

const (
	emptyShared = "shared"
	emptyReject = "reject"

	defaultMaxKeys = 100_000
	maxMaxKeys     = 10_000_000
	maxBurst       = 1_000_000
	maxRate        = 1e9
	maxMaxDelay    = time.Minute
)

func newConfig() any {
	return &Config{
		Burst:          1,
		Key:            "$remote_addr",
		EmptyKey:       emptyShared,
		EmptyKeyStatus: 400,
		MaxKeys:        defaultMaxKeys,
		Status:         429,
		Message:        "Too Many Requests",
	}
}

// Validate checks values; errors name the field.
func (c *Config) Validate() error {
	switch {
	case math.IsNaN(c.Rate) || c.Rate <= 0 || c.Rate > maxRate:
		return api.FieldErrorf("rate", "must be a number of requests per second > 0 and <= %g, got %v", float64(maxRate), c.Rate)
	case c.Burst < 1 || c.Burst > maxBurst:
		return api.FieldErrorf("burst", "must be between 1 and %d, got %d", maxBurst, c.Burst)
	case strings.TrimSpace(c.Key) == "":
		return api.FieldErrorf("key", "must be a template such as \"$remote_addr\" or \"$consumer\"")
	case c.EmptyKey != emptyShared && c.EmptyKey != emptyReject:
		return api.FieldErrorf("empty_key", "must be %q or %q, got %q", emptyShared, emptyReject, c.EmptyKey)
	case c.EmptyKeyStatus < 400 || c.EmptyKeyStatus > 599:
		return api.FieldErrorf("empty_key_status", "must be a 4xx or 5xx code, got %d", c.EmptyKeyStatus)
	case c.MaxDelay < 0 || c.MaxDelay.D() > maxMaxDelay:
		return api.FieldErrorf("max_delay", "must be between 0 and %v, got %v", maxMaxDelay, c.MaxDelay.D())
	case c.MaxKeys < 1 || c.MaxKeys > maxMaxKeys:
		return api.FieldErrorf("max_keys", "must be between 1 and %d, got %d", maxMaxKeys, c.MaxKeys)
	case c.Status < 400 || c.Status > 599:
		return api.FieldErrorf("status", "must be a 4xx or 5xx code, got %d", c.Status)
	}
	t, err := variables.CompileTemplate(c.Key)
	if err != nil {
		return api.FieldErrorf("key", "%v", err)
	}
	c.key = t
	return nil
}

// Needs: only a config with max_delay may block (it sleeps), so only then
// does OnReceive leave Envoy's worker thread; without it the check is pure
// CPU and runs inline.
func (c *Config) Needs() api.Needs {
	n := api.Needs{Phase: api.AfterRoute}
	if c.MaxDelay > 0 {
		n.MayBlock = api.BlockReceive
	}
	return n
}

// Destroy runs when Envoy drops this config version: its buckets go away
// with it, so take them out of the shared "keys" gauge.
func (c *Config) Destroy() {
	if c.rt != nil {
		c.rt.keys.Add(-int64(c.rt.cache.len()))
	}
}

// Init builds the bucket cache and metrics once per config version. Buckets
// belong to the config: a new config version starts with full buckets.
func (c *Config) Init(env api.ConfigEnv) error {
	c.rt = newRuntime(c, env.Metrics(), time.Now)
	c.replyHdr = []string{"text/plain; charset=utf-8"}
	c.emptyKeyHdrs = api.Headers{"content-type": c.replyHdr}
	for s := range c.rejectHdrs {
		c.rejectHdrs[s] = api.Headers{"content-type": c.replyHdr, "retry-after": {retryAfterValues[s]}}
	}
	return nil
}
