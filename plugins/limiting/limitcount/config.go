package limitcount

import (
	"runtime"
	"strconv"
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
	Key string `json:"key"`
	// KeyPrefix namespaces this plugin's keys in Redis.
	KeyPrefix string `json:"key_prefix"`
	// EmptyKey: what to do when a variable of the key has no value (header
	// absent, no consumer): "shared" (default: it renders empty and such
	// requests share a counter) or "reject" (answer EmptyKeyStatus).
	EmptyKey       string `json:"empty_key"`
	EmptyKeyStatus int    `json:"empty_key_status"`
	// Status and Message of the rejection (429 with Retry-After).
	Status  int    `json:"status"`
	Message string `json:"message"`
	// Headers adds X-RateLimit-Limit/Remaining/Reset to responses and to the
	// rejection (default true).
	Headers bool `json:"headers"`
	// FailurePolicy is what happens when Redis fails or times out:
	// "fail_open" (default: admit), "fail_closed" (answer FailureStatus) or
	// "local" (count in this instance alone with the same count and window).
	FailurePolicy string `json:"failure_policy"`
	FailureStatus int    `json:"failure_status"`
	// Redis is where the counters live. Configs with an equal redis section
	// share one client (and its connection pool), also across config versions.
	Redis redisclient.Config `json:"redis"`

	key       *variables.Template
	keySuffix string // "}:f60000": window kind and length, so a change of window starts new counters
	sliding   bool
	windowMS  int64
	limitHdr  []string
	replyHdr  []string
	failHdrs  api.Headers
	emptyHdrs api.Headers

	rt *limiter // set in Init
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
		Key:            "$remote_addr",
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

// Validate checks values; errors name the field.
func (c *Config) Validate() error {
	w := c.TimeWindow.D()
	switch {
	case c.Count < 1 || c.Count > maxCount:
		return api.FieldErrorf("count", "must be a number of requests >= 1, got %d", c.Count)
	case w < minWindow || w > maxWindow:
		return api.FieldErrorf("time_window", "must be between %v and %v, got %v", minWindow, maxWindow, w)
	case w%time.Millisecond != 0:
		return api.FieldErrorf("time_window", "must be a whole number of milliseconds, got %v", w)
	case c.Window != windowFixed && c.Window != windowSliding:
		return api.FieldErrorf("window", "must be %q or %q, got %q", windowFixed, windowSliding, c.Window)
	case strings.TrimSpace(c.Key) == "":
		return api.FieldErrorf("key", "must be a template such as \"$remote_addr\" or \"$consumer\"")
	case c.EmptyKey != emptyShared && c.EmptyKey != emptyReject:
		return api.FieldErrorf("empty_key", "must be %q or %q, got %q", emptyShared, emptyReject, c.EmptyKey)
	case !isErrorStatus(c.EmptyKeyStatus):
		return api.FieldErrorf("empty_key_status", "must be a 4xx or 5xx code, got %d", c.EmptyKeyStatus)
	case !isErrorStatus(c.Status):
		return api.FieldErrorf("status", "must be a 4xx or 5xx code, got %d", c.Status)
	case c.FailurePolicy != failOpen && c.FailurePolicy != failClosed && c.FailurePolicy != failLocal:
		return api.FieldErrorf("failure_policy", "must be %q, %q or %q, got %q", failOpen, failClosed, failLocal, c.FailurePolicy)
	case !isErrorStatus(c.FailureStatus):
		return api.FieldErrorf("failure_status", "must be a 4xx or 5xx code, got %d", c.FailureStatus)
	case strings.ContainsAny(c.KeyPrefix, "{}"):
		// Braces would move the Redis Cluster hash tag away from the key.
		return api.FieldErrorf("key_prefix", "must not contain '{' or '}', got %q", c.KeyPrefix)
	}
	if err := c.Redis.Check("redis"); err != nil {
		return err
	}
	// Rendered with RenderComplete, so that empty_key: reject also catches a
	// composite key with a missing part.
	k, err := variables.CompileTemplate(c.Key)
	if err != nil {
		return api.FieldErrorf("key", "%v", err)
	}
	c.key = k
	return nil
}

func isErrorStatus(s int) bool { return s >= 400 && s <= 599 }

// Init precomputes what requests need and takes a reference on the shared
// Redis client of this Redis config.
func (c *Config) Init(env api.ConfigEnv) error {
	c.sliding = c.Window == windowSliding
	c.windowMS = c.TimeWindow.D().Milliseconds()
	kind := "f"
	if c.sliding {
		kind = "s"
	}
	c.keySuffix = "}:" + kind + strconv.FormatInt(c.windowMS, 10)
	c.limitHdr = []string{strconv.FormatInt(c.Count, 10)}
	c.replyHdr = []string{"text/plain; charset=utf-8"}
	c.failHdrs = api.Headers{"content-type": c.replyHdr}
	c.emptyHdrs = api.Headers{"content-type": c.replyHdr}

	rt, err := newRuntime(c, env.Metrics())
	if err != nil {
		return err
	}
	c.rt = rt
	// Destroy is the normal way out (the framework also destroys it when a
	// later plugin of the same chain fails to parse). As a backstop for a
	// config dropped without Destroy, which would keep its reference and the
	// client open for ever, release it when the config is garbage (close is
	// idempotent). rt does not point back to c.
	runtime.AddCleanup(c, func(rt *limiter) { rt.close() }, c.rt)
	return nil
}

// Destroy runs when Envoy drops this config version: the Redis client is
// closed when no other config version uses it any more.
func (c *Config) Destroy() {
	if c.rt != nil {
		c.rt.close()
	}
}
