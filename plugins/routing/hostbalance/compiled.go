package hostbalance

import (
	"net/netip"
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// compiled is what Init builds once per config version: the balancer (with
// its host state), the DNS resolver and the metrics.
type compiled struct {
	bal *balancer
	dns *resolver

	fallbackNoHosts, fallbackEjected, skippedCluster, overrideMissed, overrideFailed, hashKeyEmpty api.Counter
}

// epoch anchors the monotonic clock the balancer runs on.
var epoch = time.Now()

func monoNow() int64 { return int64(time.Since(epoch)) }

var strategyKinds = map[string]strategyKind{
	RoundRobin: kRoundRobin, WeightedRoundRobin: kWeightedRoundRobin, Random: kRandom,
	LeastRequest: kLeastRequest, PeakEWMA: kPeakEWMA,
}

// Init builds the balancer; with dns it resolves the name once (bounded by
// dns.timeout) and starts the periodic re-resolution. When the config is only
// checked (env.CheckOnly) the name is not resolved and nothing is started
// (Validate checked the dns section).
func (c *Config) Init(env api.ConfigEnv) error {
	c.bal = newBalancer(c.options(), env.Metrics())
	log := env.Log()
	c.bal.onEject = func(h *host, d int64) {
		log.Warnf("host %s ejected for %v after %d consecutive failures", h.addr, time.Duration(d), c.Outlier.ConsecutiveFailures)
	}
	if len(c.Hosts) > 0 {
		addrs := make([]string, len(c.Hosts))
		weights := make([]float64, len(c.Hosts))
		for i, h := range c.Hosts {
			addrs[i] = canonical(netip.MustParseAddrPort(h.Address))
			weights[i] = float64(max(h.Weight, 1))
		}
		c.bal.setHosts(addrs, weights)
	}
	if c.DNS != nil && !env.CheckOnly() {
		c.dns = newResolver(*c.DNS, c.bal, env)
		if err := c.dns.resolveOnce(); err != nil {
			log.Warnf("dns %s: %v; requests go to Envoy's own balancing until it resolves", c.DNS.Name, err)
		}
		go c.dns.run()
	}
	m := env.Metrics()
	c.fallbackNoHosts = m.Counter("fallback_no_hosts")
	c.fallbackEjected = m.Counter("fallback_all_ejected")
	c.skippedCluster = m.Counter("skipped_other_cluster")
	c.overrideMissed = m.Counter("override_missed")
	c.overrideFailed = m.Counter("override_failed")
	c.hashKeyEmpty = m.Counter("hash_key_empty")
	return nil
}

// Destroy stops the DNS re-resolution of this config version.
func (c *Config) Destroy() {
	if c.dns != nil {
		select {
		case <-c.dns.stop:
		default:
			close(c.dns.stop)
		}
	}
}

func (c *Config) options() options {
	o := options{
		strategy:       strategyKinds[c.Strategy],
		choices:        c.Choices,
		bias:           c.ActiveRequestBias,
		tau:            float64(c.PeakEWMA.Decay.D()),
		defaultLatency: float64(c.PeakEWMA.DefaultLatency.D()),
		ringSize:       c.Hash.RingSize,
		tableSize:      c.Hash.TableSize,
		consecutive:    c.Outlier.ConsecutiveFailures,
		base:           int64(c.Outlier.BaseEjectionTime.D()),
		max:            int64(c.Outlier.MaxEjectionTime.D()),
	}
	if c.Strategy == ConsistentHash {
		o.strategy = kRing
		if c.Hash.Algorithm == "maglev" {
			o.strategy = kMaglev
		}
	}
	return o
}
