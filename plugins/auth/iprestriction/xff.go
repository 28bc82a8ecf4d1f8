package iprestriction

import (
	"net/netip"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// nthFromRight returns the nth (1-based) comma-separated entry counted from
// the right across all X-Forwarded-For header lines (a repeated header is the
// same list split over several lines, RFC 9110 5.3). It does not allocate.
func nthFromRight(lines []string, n int) (string, bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		v := lines[i]
		for {
			j := strings.LastIndexByte(v, ',')
			if n--; n == 0 {
				return strings.Trim(v[j+1:], " \t"), true
			}
			if j < 0 {
				break
			}
			v = v[:j]
		}
	}
	return "", false
}

// parseIP reads an address as found in X-Forwarded-For or Envoy's downstream
// address: "192.0.2.1", "2001:db8::1", "192.0.2.1:443" or "[2001:db8::1]:443".
// Zones are dropped and IPv4-mapped IPv6 addresses unmapped, so IPv4 rules
// match them.
func parseIP(s string) (netip.Addr, bool) {
	var a netip.Addr
	// Choose the parser by shape: a failed parse allocates its error, and this
	// runs per request. "[v6]:port" and "v4:port" have a port; a bare IPv6
	// address has two colons or more.
	if n := strings.Count(s, ":"); (n > 0 && s[0] == '[') || n == 1 {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	} else {
		var err error
		if a, err = netip.ParseAddr(s); err != nil {
			return netip.Addr{}, false
		}
	}
	if a.Zone() != "" {
		a = a.WithZone("")
	}
	return a.Unmap(), true
}

// clientAddr picks the address the rules apply to; ok=false means none could
// be determined (the request is denied as bad_address).
func (c *Config) clientAddr(ctx api.Context, h api.RequestHeaderMap) (netip.Addr, bool) {
	if c.XFFNumTrustedHops > 0 {
		if e, ok := nthFromRight(h.Values("x-forwarded-for"), c.XFFNumTrustedHops); ok {
			if a, ok := parseIP(e); ok {
				return a, true
			}
		}
		if !c.fallbackRemote {
			return netip.Addr{}, false
		}
	}
	return parseIP(ctx.Receiver().RequestInfo().DownstreamRemoteAddress())
}
