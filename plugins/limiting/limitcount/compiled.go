package limitcount

import (
	"runtime"
	"strconv"

	"github.com/moeproxy/moe/shared/api"
)

// compiled is what Init builds once per config version.
type compiled struct {
	keySuffix string // "}:f60000": window kind and length, so a change of window starts new counters
	sliding   bool
	windowMS  int64
	limitHdr  []string
	replyHdr  []string
	failHdrs  api.Headers
	emptyHdrs api.Headers

	rt *limiter // the counter store, fallback, metrics and Redis client reference (limiter.go)
}

// Init precomputes what requests need and takes a reference on the shared
// Redis client of this Redis config. When the config is only checked
// (env.CheckOnly), Validate has checked the redis section and no client is
// acquired.
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
	if env.CheckOnly() {
		return nil
	}

	rt, err := newLimiter(c, env.Metrics())
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
// closed when no other config (of any plugin) uses it any more.
func (c *Config) Destroy() {
	if c.rt != nil {
		c.rt.close()
	}
}
