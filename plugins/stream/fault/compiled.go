package fault

import (
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// compiled is what Init builds: the sampling thresholds, the prebuilt
// reply, the bound on active faults and the metrics.
type compiled struct {
	delayOn, abortOn bool
	delayP, abortP   sampler
	delay            time.Duration
	abortHeaders     api.Headers

	active *atomic.Int64 // faults in progress for this config

	delays, aborts, overflow api.Counter
	activeGauge              api.Gauge
}

// sampler picks a fraction of requests: a request is picked when a uniform
// random 64-bit number is below the threshold, so the fraction is exact to
// 2^-64 (Envoy's fault filter picks per million).
type sampler struct {
	always    bool
	threshold uint64
}

func newSampler(p *float64) sampler {
	pct := 100.0
	if p != nil {
		pct = *p
	}
	t := math.Ldexp(pct/100, 64)
	if pct >= 100 || t >= math.Ldexp(1, 64) { // 2^64 does not fit: every request
		return sampler{always: true}
	}
	return sampler{threshold: uint64(t)}
}

// hit draws for one request. math/rand/v2's top-level generator is
// per-thread in the runtime: no lock shared by Envoy's workers.
func (s sampler) hit() bool {
	return s.always || (s.threshold > 0 && rand.Uint64() < s.threshold)
}

// Init runs once per config version, after Validate.
func (c *Config) Init(env api.ConfigEnv) error {
	if d := c.Delay; d != nil {
		c.delayP = newSampler(d.Percentage)
		c.delay = d.Duration.D()
		c.delayOn = c.delayP.always || c.delayP.threshold > 0
	}
	if a := c.Abort; a != nil {
		c.abortP = newSampler(a.Percentage)
		c.abortOn = c.abortP.always || c.abortP.threshold > 0
		c.abortHeaders = api.Headers{}
		for k, v := range a.Headers {
			c.abortHeaders[strings.ToLower(k)] = []string{v}
		}
	}
	c.active = new(atomic.Int64)
	m := env.Metrics()
	c.delays = m.Counter("delays_injected")
	c.aborts = m.Counter("aborts_injected")
	c.overflow = m.Counter("faults_overflow")
	c.activeGauge = m.Gauge("active_faults")
	if !c.delayOn && !c.abortOn {
		env.Log().Warnf("every percentage is 0: the plugin injects nothing")
	}
	return nil
}
