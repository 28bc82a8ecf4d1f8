package hostbalance

import (
	"context"
	"net"
	"net/netip"
	"runtime/debug"
	"slices"
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// resolver keeps the host list of a `dns` config current, the way a
// STRICT_DNS cluster does: resolve at start, then every refresh; a failed
// resolution keeps the previous list, a successful one replaces it (hosts that
// stay keep their state).
type resolver struct {
	cfg    DNSConfig
	bal    *balancer
	log    api.Logger
	lookup func(ctx context.Context, name string) ([]netip.Addr, error)
	stop   chan struct{}
	done   chan struct{}

	resolutions, failures api.Counter
}

// lookupIP is how a resolver resolves a name: the system resolver (tests count
// the lookups).
var lookupIP = func(ctx context.Context, name string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", name)
}

func newResolver(cfg DNSConfig, b *balancer, env api.ConfigEnv) *resolver {
	m := env.Metrics()
	return &resolver{
		cfg: cfg, bal: b, log: env.Log(),
		lookup:      lookupIP,
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
		resolutions: m.Counter("dns_resolutions"),
		failures:    m.Counter("dns_failures"),
	}
}

// resolveOnce resolves the name and installs the addresses it gives.
func (r *resolver) resolveOnce() error {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout.D())
	defer cancel()
	ips, err := r.lookup(ctx, r.cfg.Name)
	if err != nil {
		r.failures.Inc(1)
		return err
	}
	r.resolutions.Inc(1)
	addrs := pickFamily(ips, r.cfg.Family)
	if len(addrs) > maxHosts {
		addrs = addrs[:maxHosts]
	}
	hosts := make([]string, len(addrs))
	weights := make([]float64, len(addrs))
	for i, a := range addrs {
		hosts[i] = netip.AddrPortFrom(a, uint16(r.cfg.Port)).String()
		weights[i] = 1
	}
	if cur := r.bal.set.Load(); !sameHosts(cur, hosts) {
		r.log.Infof("dns %s: hosts %v", r.cfg.Name, hosts)
		r.bal.setHosts(hosts, weights)
	}
	return nil
}

func sameHosts(s *hostSet, addrs []string) bool {
	if len(s.hosts) != len(addrs) {
		return false
	}
	for i, h := range s.hosts {
		if h.addr != addrs[i] {
			return false
		}
	}
	return true
}

// pickFamily filters, dedups and sorts resolved addresses by family.
func pickFamily(ips []netip.Addr, family string) []netip.Addr {
	var v4, v6 []netip.Addr
	for _, ip := range ips {
		ip = ip.Unmap()
		if ip.Is4() {
			v4 = append(v4, ip)
		} else {
			v6 = append(v6, ip.WithZone(""))
		}
	}
	var out []netip.Addr
	switch family {
	case "v4_only":
		out = v4
	case "v6_only":
		out = v6
	case "v6_preferred":
		out = v6
		if len(out) == 0 {
			out = v4
		}
	case "all":
		out = append(v4, v6...)
	default: // v4_preferred
		out = v4
		if len(out) == 0 {
			out = v6
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(out)
}

// run re-resolves every refresh until stop is closed.
func (r *resolver) run() {
	defer close(r.done)
	t := time.NewTicker(r.cfg.Refresh.D())
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		r.safeResolve()
	}
}

func (r *resolver) safeResolve() {
	defer func() {
		if p := recover(); p != nil {
			r.log.Errorf("dns %s: panic: %v\n%s", r.cfg.Name, p, debug.Stack())
		}
	}()
	if err := r.resolveOnce(); err != nil {
		r.log.Warnf("dns %s: %v (keeping %d hosts)", r.cfg.Name, err, len(r.bal.set.Load().hosts))
	}
}
