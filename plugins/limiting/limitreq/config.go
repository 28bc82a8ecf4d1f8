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
	Key *variables.Template `json:"key"`
	// EmptyKey is what to do when the key renders empty (header absent, no
	// consumer): "shared" (default: all such requests share one bucket) or
	// "reject" (answer EmptyKeyStatus).
	EmptyKey string `json:"empty_key"`
	// EmptyKeyStatus answers a request refused by empty_key "reject".
	EmptyKeyStatus int `json:"empty_key_status"`
	// MaxDelay > 0 lets a request that finds the bucket empty wait up to this
	// long for its turn (nginx limit_req without nodelay) instead of being
	// rejected at once. Waiting happens off Envoy's worker thread.
	MaxDelay api.Duration `json:"max_delay"`
	// MaxKeys caps the number of buckets kept (least recently used are
	// dropped), so a flood of distinct keys cannot grow memory without bound.
	MaxKeys int `json:"max_keys"`
	// Status of the rejection; Retry-After is added.
	Status int `json:"status"`
	// Message is the body of the rejection (text/plain).
	Message string `json:"message"`

	compiled // built by Init (compiled.go)
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
		Key:            variables.MustCompileTemplate("$remote_addr"),
		EmptyKey:       emptyShared,
		EmptyKeyStatus: 400,
		MaxKeys:        defaultMaxKeys,
		Status:         429,
		Message:        "Too Many Requests",
	}
}

// Validate checks values; errors name the field. The key template's
// variables were checked while decoding.
func (c *Config) Validate() error {
	// Strictly positive, so not CheckRange (JSON has no NaN; configs built in
	// Go might).
	if math.IsNaN(c.Rate) || c.Rate <= 0 || c.Rate > maxRate {
		return api.FieldErrorf("rate", "must be a number of requests per second > 0 and <= %g, got %v", float64(maxRate), c.Rate)
	}
	if err := api.CheckRange("burst", c.Burst, 1, maxBurst); err != nil {
		return err
	}
	if c.Key == nil || strings.TrimSpace(c.Key.String()) == "" {
		return api.FieldErrorf("key", "must be a template such as \"$remote_addr\" or \"$consumer\"")
	}
	if err := api.CheckOneOf("empty_key", c.EmptyKey, emptyShared, emptyReject); err != nil {
		return err
	}
	if err := api.CheckStatus("empty_key_status", c.EmptyKeyStatus); err != nil {
		return err
	}
	if err := api.CheckRange("max_delay", c.MaxDelay.D(), 0, maxMaxDelay); err != nil {
		return err
	}
	if err := api.CheckRange("max_keys", c.MaxKeys, 1, maxMaxKeys); err != nil {
		return err
	}
	return api.CheckStatus("status", c.Status)
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
