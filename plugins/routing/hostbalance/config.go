package hostbalance

import (
	"net/netip"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// Strategy names (the `strategy` field).
const (
	RoundRobin         = "round-robin"
	WeightedRoundRobin = "weighted-round-robin"
	Random             = "random"
	ConsistentHash     = "consistent-hash"
	LeastRequest       = "least-request"
	PeakEWMA           = "peak-ewma"
)

var strategies = []string{RoundRobin, WeightedRoundRobin, Random, ConsistentHash, LeastRequest, PeakEWMA}

// Config is the host-balance config. The host list is the route's cluster's,
// given either statically (`hosts`, for a STATIC cluster) or as a DNS name
// resolved periodically (`dns`, for a STRICT_DNS cluster).
type Config struct {
	// Hosts are the cluster's endpoints ("ip:port") with optional weights.
	Hosts []HostConfig `json:"hosts"`
	// DNS resolves the host list from a name instead (like a STRICT_DNS
	// cluster); exactly one of hosts and dns is set.
	DNS *DNSConfig `json:"dns"`
	// Strategy picks the host: round-robin (default), weighted-round-robin,
	// random, consistent-hash, least-request, peak-ewma.
	Strategy string `json:"strategy"`
	// Hash configures consistent-hash.
	Hash HashConfig `json:"hash"`
	// Choices is how many random hosts least-request and peak-ewma compare
	// (power of two choices: 2).
	Choices int `json:"choices"`
	// ActiveRequestBias is the exponent of (active requests + 1) in the
	// least-request and peak-ewma scores (Envoy's and MOSN's
	// active_request_bias; 1.0).
	ActiveRequestBias float64 `json:"active_request_bias"`
	// PeakEWMA configures peak-ewma.
	PeakEWMA PeakEWMAConfig `json:"peak_ewma"`
	// Outlier configures the ejection of failing hosts.
	Outlier OutlierConfig `json:"outlier_detection"`
	// Strict is SetUpstreamOverrideHost's strict flag: true answers 503 when
	// Envoy cannot use the pinned host, false (default) lets Envoy fall back to
	// its own load balancing.
	Strict bool `json:"strict"`
	// Cluster, when set, limits the plugin to requests whose route goes to
	// this cluster (other requests are left to Envoy).
	Cluster string `json:"cluster"`

	compiled
}

// HostConfig is one static host.
type HostConfig struct {
	// Address is "ip:port" ("[v6]:port" for IPv6), as Envoy names the host.
	Address string `json:"address"`
	// Weight (default 1) for the weighted strategies.
	Weight int `json:"weight"`
}

// DNSConfig resolves the host list from a name, as a STRICT_DNS cluster does.
type DNSConfig struct {
	// Name to resolve (tests: names that resolve to loopback, e.g. localhost).
	Name string `json:"name"`
	// Port of every resolved address.
	Port int `json:"port"`
	// Refresh is the re-resolution period (Envoy's dns_refresh_rate, 5s).
	Refresh api.Duration `json:"refresh"`
	// Timeout bounds one resolution (1s).
	Timeout api.Duration `json:"timeout"`
	// Family: v4_preferred (default: IPv4 addresses if any, else IPv6, as
	// moe-host and Envoy's V4_PREFERRED), v6_preferred, v4_only, v6_only, all.
	Family string `json:"family"`
}

// HashConfig is the consistent-hash setup.
type HashConfig struct {
	// Key is the variable template hashed per request, e.g. "$header_x-user".
	Key *variables.Template `json:"key"`
	// Algorithm: ring (default, Envoy's RING_HASH) or maglev (Envoy's MAGLEV).
	Algorithm string `json:"algorithm"`
	// RingSize is the number of ring entries (ring; 1024, Envoy's
	// minimum_ring_size).
	RingSize int `json:"ring_size"`
	// TableSize is the maglev lookup table size, a prime (65537, as Envoy).
	TableSize int `json:"table_size"`
}

// PeakEWMAConfig is the peak-ewma setup.
type PeakEWMAConfig struct {
	// Decay is the time constant of the latency and success averages (10s,
	// as Finagle, Linkerd and Envoy's contrib peak_ewma).
	Decay api.Duration `json:"decay"`
	// DefaultLatency scores a host without samples while no host of the set
	// has any (10ms); afterwards such a host gets the set's average.
	DefaultLatency api.Duration `json:"default_latency"`
}

// OutlierConfig ejects hosts that fail (5xx, connect failures, resets,
// timeouts) for a back-off period, like Envoy's consecutive_5xx outlier
// detection.
type OutlierConfig struct {
	// ConsecutiveFailures ejects a host after this many failures in a row
	// (5, as Envoy; 0 turns ejection off).
	ConsecutiveFailures int `json:"consecutive_failures"`
	// BaseEjectionTime is the first ejection's length; the n-th ejection in a
	// row lasts n times as long (30s, as Envoy).
	BaseEjectionTime api.Duration `json:"base_ejection_time"`
	// MaxEjectionTime caps an ejection (300s, as Envoy).
	MaxEjectionTime api.Duration `json:"max_ejection_time"`
}

func newConfig() any {
	return &Config{
		Strategy:          RoundRobin,
		Hash:              HashConfig{Algorithm: "ring", RingSize: 1024, TableSize: 65537},
		Choices:           2,
		ActiveRequestBias: 1,
		PeakEWMA:          PeakEWMAConfig{Decay: api.Duration(10 * time.Second), DefaultLatency: api.Duration(10 * time.Millisecond)},
		Outlier: OutlierConfig{ConsecutiveFailures: 5, BaseEjectionTime: api.Duration(30 * time.Second),
			MaxEjectionTime: api.Duration(300 * time.Second)},
	}
}

// maxHosts bounds the host list (static or resolved): the balancer scans it
// in the rare paths (ejections, warm-up).
const maxHosts = 1024

// Validate checks everything that needs no I/O.
func (c *Config) Validate() error {
	switch {
	case len(c.Hosts) == 0 && c.DNS == nil:
		return api.FieldErrorf("hosts", "is required (or dns): the cluster's hosts")
	case len(c.Hosts) > 0 && c.DNS != nil:
		return api.FieldErrorf("dns", "set either hosts or dns, not both")
	case len(c.Hosts) > maxHosts:
		return api.FieldErrorf("hosts", "at most %d hosts, got %d", maxHosts, len(c.Hosts))
	}
	seen := map[string]int{}
	for i, h := range c.Hosts {
		ap, err := netip.ParseAddrPort(h.Address)
		if err != nil || ap.Port() == 0 {
			return api.FieldErrorf(api.Field("hosts", i, "address"), "%q is not ip:port (Envoy pins hosts by address, e.g. 10.0.0.7:8080 or [::1]:8080)", h.Address)
		}
		key := canonical(ap)
		if j, dup := seen[key]; dup {
			return api.FieldErrorf(api.Field("hosts", i, "address"), "%s is also hosts[%d]", h.Address, j)
		}
		seen[key] = i
		if err := api.CheckRange(api.Field("hosts", i, "weight"), h.Weight, 0, 10000); err != nil {
			return err
		}
	}
	if d := c.DNS; d != nil {
		if d.Name == "" || strings.ContainsAny(d.Name, "/: ") {
			return api.FieldErrorf("dns.name", "must be a host name, got %q", d.Name)
		}
		if err := api.CheckRange("dns.port", d.Port, 1, 65535); err != nil {
			return err
		}
		if d.Refresh == 0 {
			d.Refresh = api.Duration(5 * time.Second)
		}
		if d.Timeout == 0 {
			d.Timeout = api.Duration(time.Second)
		}
		if d.Family == "" {
			d.Family = "v4_preferred"
		}
		if err := api.CheckRange("dns.refresh", d.Refresh.D(), 100*time.Millisecond, time.Hour); err != nil {
			return err
		}
		if err := api.CheckRange("dns.timeout", d.Timeout.D(), 10*time.Millisecond, time.Minute); err != nil {
			return err
		}
		if err := api.CheckOneOf("dns.family", d.Family, "v4_preferred", "v6_preferred", "v4_only", "v6_only", "all"); err != nil {
			return err
		}
	}
	if err := api.CheckOneOf("strategy", c.Strategy, strategies...); err != nil {
		return err
	}
	if c.Strategy == ConsistentHash && c.Hash.Key == nil {
		return api.FieldErrorf("hash.key", "is required for strategy consistent-hash (e.g. \"$header_x-user\")")
	}
	if err := api.CheckOneOf("hash.algorithm", c.Hash.Algorithm, "ring", "maglev"); err != nil {
		return err
	}
	if err := api.CheckRange("hash.ring_size", c.Hash.RingSize, 1, 8<<20); err != nil {
		return err
	}
	if err := api.CheckRange("hash.table_size", c.Hash.TableSize, 2, 5000011); err != nil {
		return err
	}
	if !isPrime(c.Hash.TableSize) {
		return api.FieldErrorf("hash.table_size", "must be a prime (maglev), got %d", c.Hash.TableSize)
	}
	if err := api.CheckRange("choices", c.Choices, 2, 10); err != nil {
		return err
	}
	if err := api.CheckRange("active_request_bias", c.ActiveRequestBias, 0, 10); err != nil {
		return err
	}
	if err := api.CheckRange("peak_ewma.decay", c.PeakEWMA.Decay.D(), time.Millisecond, time.Hour); err != nil {
		return err
	}
	if err := api.CheckRange("peak_ewma.default_latency", c.PeakEWMA.DefaultLatency.D(), time.Microsecond, time.Hour); err != nil {
		return err
	}
	o := c.Outlier
	if err := api.CheckRange("outlier_detection.consecutive_failures", o.ConsecutiveFailures, 0, 1000); err != nil {
		return err
	}
	if err := api.CheckRange("outlier_detection.base_ejection_time", o.BaseEjectionTime.D(), time.Millisecond, 24*time.Hour); err != nil {
		return err
	}
	if o.MaxEjectionTime.D() < o.BaseEjectionTime.D() {
		return api.FieldErrorf("outlier_detection.max_ejection_time", "must be at least base_ejection_time (%v), got %v", o.BaseEjectionTime.D(), o.MaxEjectionTime.D())
	}
	return nil
}

// canonical is the host name Envoy compares override hosts with: "ip:port",
// "[v6]:port", IPv4-mapped IPv6 addresses as IPv4.
func canonical(ap netip.AddrPort) string {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
}

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}
