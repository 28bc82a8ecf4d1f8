// Package hostbalance is the host-balance plugin: Go-side load balancing
// that pins the upstream host with SetUpstreamOverrideHost (MOSN's
// AfterChooseHost on Envoy), over the route's cluster's host list given in
// config (static, or a DNS name resolved periodically like a STRICT_DNS
// cluster). Strategies: round-robin, weighted-round-robin, random,
// consistent-hash (ring or maglev), least-request and peak-ewma (both power of
// two choices). Failing hosts are ejected for a back-off period; with every
// host ejected Envoy's own balancing takes over.
//
// Files: config.go (Config, defaults, Validate), compiled.go (Init: the
// balancer, the resolver, metrics), balancer.go (strategies, peak EWMA,
// outlier detection, on a caller-given clock), hash.go (ring and maglev),
// dns.go (re-resolution), filter.go (the request path).
package hostbalance

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/variables"
)

// Name is the registered plugin name.
const Name = "host-balance"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "Go-side load balancing: pins the upstream host (round robin, weighted, random, consistent hash, least request, peak EWMA) with outlier ejection",
		NewConfig:   newConfig,
		// One small filter per request: it remembers the host until the log.
		Factory: registry.Typed(func(c *Config) api.Filter { return &filter{c: c} }),
		// AfterRoute: the route (and its cluster) is known; nothing blocks.
		Needs: api.Needs{Phase: api.AfterRoute},
	})
	// $host_balance_host: the host this request was pinned to ("" when none).
	variables.Register("host_balance_host", func(ctx api.Context) (string, bool) {
		v, _ := ctx.GetState(stateKey)
		if h, ok := v.(*host); ok {
			return h.addr, true
		}
		return "", false
	})
}

var (
	_ api.ReceiverFilter = (*filter)(nil)
	_ api.SenderFilter   = (*filter)(nil)
	_ api.AccessLogger   = (*filter)(nil)

	_ api.Validator   = (*Config)(nil)
	_ api.Initializer = (*Config)(nil)
	_ api.Destroyable = (*Config)(nil)
)
