package limitcount

import (
	"strings"
	"time"

	"github.com/moeproxy/moe/plugins/internal/redisclient"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// Config of the limit-count plugin. See README.md for the reference.
type Config struct {
	// Count is how many requests a key may make per TimeWindow (>= 1).
	Count int64 `json:"count"`
	// TimeWindow is the window length ("1s", "1m"; a bare number is seconds,
	// as in APISIX). Millisecond precision, between 10ms and 24h.
	TimeWindow api.Duration `json:"time_window"`
	// Window is "fixed" (default: a window starts at a key's first request and
	// lasts TimeWindow) or "sliding" (the two-window weighted estimate).
	Window string `json:"window"`
	// Key is the template naming the counter, e.g. "$remote_addr",
	// "$consumer" or "$route_name:$header_x-user". Every Envoy instance (and
	// every route) rendering the same key shares the counter.
	Key *variables.Template `json:"key"`
	// KeyPrefix namespaces this plugin's keys in Redis.
	KeyPrefix string `json:"key_prefix"`
	// EmptyKey: what to do when a variable of the key has no value (header
	// absent, no consumer): "shared" (default: it renders empty and such
	// requests share a counter) or "reject" (answer EmptyKeyStatus). Checked
	// with RenderComplete, so a composite key with a missing part counts too.
	EmptyKey string `json:"empty_key"`
	// EmptyKeyStatus answers a request refused by empty_key "reject".
	EmptyKeyStatus int `json:"empty_key_status"`
	// Status of the rejection (with Retry-After).
	Status int `json:"status"`
	// Message is the body of the rejection (text/plain).
	Message string `json:"message"`
	// Headers adds X-RateLimit-Limit/Remaining/Reset to responses and to the
	// rejection (default true).
	Headers bool `json:"headers"`
	// FailurePolicy is what happens when Redis fails or times out:
	// "fail_open" (default: admit), "fail_closed" (answer FailureStatus) or
	// "local" (count in this instance alone with the same count and window).
	FailurePolicy string `json:"failure_policy"`
	// FailureStatus answers requests under fail_closed while Redis fails.
	FailureStatus int `json:"failure_status"`
	// Redis is where the counters live. Configs with an equal redis section
	// share one client (and its connection pool), also across config versions
	// and with other plugins (plugins/internal/redisclient).
	Redis redisclient.Config `json:"redis"`

	compiled // built by Init (compiled.go)
}

const (
	windowFixed   = "fixed"
	windowSliding = "sliding"

	emptyShared = "shared"
	emptyReject = "reject"

	failOpen   = "fail_open"
	failClosed = "fail_closed"
	failLocal  = "local"

	minWindow = 10 * time.Millisecond
	maxWindow = 24 * time.Hour
	maxCount  = 1 << 40
)

func newConfig() any {
	return &Config{
		Window:         windowFixed,
		Key:            variables.MustCompileTemplate("$remote_addr"),
		KeyPrefix:      "moe:limit-count:",
		EmptyKey:       emptyShared,
		EmptyKeyStatus: 400,
		Status:         429,
		Message:        "Too Many Requests",
		Headers:        true,
		FailurePolicy:  failOpen,
		FailureStatus:  503,
		Redis:          redisclient.DefaultConfig(),
	}
}

// Validate checks values; errors name the field. The key template's
// variables were checked while decoding; the redis section (and its TLS
// files) by redisclient.
func (c *Config) Validate() error {
	if err := api.CheckRange("count", c.Count, 1, maxCount); err != nil {
		return err
	}
	w := c.TimeWindow.D()
	if err := api.CheckRange("time_window", w, minWindow, maxWindow); err != nil {
		return err
	}
	if w%time.Millisecond != 0 {
		return api.FieldErrorf("time_window", "must be a whole number of milliseconds, got %v", w)
	}
	if err := api.CheckOneOf("window", c.Window, windowFixed, windowSliding); err != nil {
		return err
	}
	if c.Key == nil || strings.TrimSpace(c.Key.String()) == "" {
		return api.FieldErrorf("key", "must be a template such as \"$remote_addr\" or \"$consumer\"")
	}
	if strings.ContainsAny(c.KeyPrefix, "{}") {
		// Braces would move the Redis Cluster hash tag away from the key.
		return api.FieldErrorf("key_prefix", "must not contain '{' or '}', got %q", c.KeyPrefix)
	}
	if err := api.CheckOneOf("empty_key", c.EmptyKey, emptyShared, emptyReject); err != nil {
		return err
	}
	if err := api.CheckStatus("empty_key_status", c.EmptyKeyStatus); err != nil {
		return err
	}
	if err := api.CheckStatus("status", c.Status); err != nil {
		return err
	}
	if err := api.CheckOneOf("failure_policy", c.FailurePolicy, failOpen, failClosed, failLocal); err != nil {
		return err
	}
	if err := api.CheckStatus("failure_status", c.FailureStatus); err != nil {
		return err
	}
	return c.Redis.Check("redis")
}
