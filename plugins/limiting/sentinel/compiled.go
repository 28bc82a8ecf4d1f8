package sentinel

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/alibaba/sentinel-golang/core/base"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// reason is the rule type that blocked a request.
type reason uint8

const (
	reasonNone reason = iota
	reasonFlow
	reasonIsolation
	reasonBreaker
	reasonHotspot
	reasonSystem
	numReasons
)

// headerReason is the value of the blocked header; metricReason the metric
// name part.
var (
	headerReason = [numReasons]string{"", "flow", "isolation", "circuit-breaker", "hotspot", "system"}
	metricReason = [numReasons]string{"", "flow", "isolation", "circuit_breaker", "hotspot", "system"}
)

func reasonOf(t base.BlockType) reason {
	switch t {
	case base.BlockTypeFlow:
		return reasonFlow
	case base.BlockTypeIsolation:
		return reasonIsolation
	case base.BlockTypeCircuitBreaking:
		return reasonBreaker
	case base.BlockTypeHotSpotParamFlow:
		return reasonHotspot
	case base.BlockTypeSystemFlow:
		return reasonSystem
	}
	return reasonFlow
}

// runtime is everything Init precomputes for the request path.
type runtime struct {
	namespace string
	space     *space
	resource  *variables.Template

	pressureMatch *variables.Template
	pressureValue string

	errorFrom   int
	errorCodes  []int
	replyStatus [numReasons]int
	replyHeader [numReasons]api.Headers
	replyBody   [numReasons]string

	inflight api.Gauge

	destroyOnce sync.Once
}

// Init precomputes the request-path state, checks every rule with
// sentinel's own validators and registers the rules. When the config is only
// checked (env.CheckOnly) the rules are built and validated the same way, but
// nothing process-wide happens: sentinel is not initialised, no system
// collector starts, the rule manager gets no namespace, sentinel's logger and
// the breaker metrics are not bound.
func (c *Config) Init(env api.ConfigEnv) error {
	check := env.CheckOnly()
	m := env.Metrics()
	if !check {
		if err := initSentinel(); err != nil {
			return fmt.Errorf("initializing sentinel: %w", err)
		}
		logger.set(env.Log())
		bindBreakerMetrics(m)
	}
	rt := &runtime{
		resource:  c.Resource,
		errorFrom: c.ErrorStatusFrom,
		inflight:  m.Gauge("inflight"),
	}
	rt.errorCodes = append(rt.errorCodes, c.ErrorStatuses...)

	if len(c.System) > 0 && !check {
		startSystemCollectors()
	}
	if p := c.PressureTest; p != nil {
		rt.pressureMatch = p.Match
		rt.pressureValue = p.Value
	}

	b := c.Blocked
	for r := reason(1); r < numReasons; r++ {
		rt.replyStatus[r] = b.Status
		if r == reasonBreaker {
			rt.replyStatus[r] = b.CircuitBreakerStatus
		}
		h := api.Headers{}
		if b.Header != "-" {
			h.Set(b.Header, headerReason[r])
		}
		if b.Body != "" && b.ContentType != "" {
			h.Set("content-type", b.ContentType)
		}
		rt.replyHeader[r] = h
		rt.replyBody[r] = strings.ReplaceAll(b.Body, "{reason}", headerReason[r])
	}

	hash, err := contentHash(c)
	if err != nil {
		return err
	}
	rt.namespace = c.Namespace
	if rt.namespace == "" {
		// The same config parsed again (xDS resends every filter config on any
		// change) lands in the same namespace and keeps its counters and breaker
		// states; any difference gives a new namespace.
		rt.namespace = "c" + hash
	}
	sr := newSpaceRules(c, hash)
	if err := sr.check(rt.namespace); err != nil {
		return err
	}
	c.rt = rt
	if !check {
		rt.space = mgr.acquire(rt.namespace, sr, c.MaxResources, m)
	}
	return nil
}

// contentHash identifies a config's content.
func contentHash(c *Config) (string, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("hashing config: %w", err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:6]), nil
}

// Destroy unloads this config's rules (when no other live config shares its
// namespace). Envoy calls it when it drops the config version.
func (c *Config) Destroy() {
	if c.rt == nil || c.rt.space == nil { // nil space: only checked
		return
	}
	c.rt.destroyOnce.Do(func() { mgr.release(c.rt.space) })
}

func (rt *runtime) isError(status int) bool {
	if status >= rt.errorFrom {
		return true
	}
	for _, s := range rt.errorCodes {
		if s == status {
			return true
		}
	}
	return false
}
