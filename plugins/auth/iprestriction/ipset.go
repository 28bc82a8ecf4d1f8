package iprestriction

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// ipSet is a set of IP ranges compiled once per config: CIDRs become closed
// [lo, hi] intervals, sorted and merged, so a lookup is one binary search with
// no allocation. IPv4 (and IPv4-mapped IPv6) addresses live in their own
// uint32 table. Written here because the library made for this
// (go4.org/netipx.IPSet) is not available from our module proxy; this is the
// small part of it we need.
type ipSet struct {
	v4 []span4
	v6 []span6
}

type span4 struct{ lo, hi uint32 }

// u128 is an IPv6 address as a big-endian 128-bit number.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

// next returns a+1 and whether it did not overflow.
func (a u128) next() (u128, bool) {
	if a.lo != ^uint64(0) {
		return u128{a.hi, a.lo + 1}, true
	}
	if a.hi != ^uint64(0) {
		return u128{a.hi + 1, 0}, true
	}
	return a, false
}

type span6 struct{ lo, hi u128 }

// parseEntry reads "10.0.0.0/8", "2001:db8::/32", "192.0.2.7" or "::1". Host
// bits after the prefix are masked, as Envoy's CidrRange does. An
// IPv4-mapped IPv6 entry (::ffff:a.b.c.d[/n>=96]) is stored as IPv4, because
// addresses are unmapped before lookup.
func parseEntry(s string) (netip.Prefix, error) {
	s = strings.Trim(s, " \t") // CR, LF and other control bytes stay and are rejected
	if s == "" {
		return netip.Prefix{}, fmt.Errorf("empty address")
	}
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, fmt.Errorf("invalid CIDR %q (want e.g. 10.0.0.0/8 or 2001:db8::/32)", s)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("invalid IP address %q (want an IPv4/IPv6 address or CIDR, no zone)", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("IPv4-mapped CIDR %q must have a prefix length of at least 96", s)
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// newIPSet compiles entries; field names the config field for errors.
func newIPSet(entries []string) (*ipSet, error) {
	s := &ipSet{}
	for i, e := range entries {
		p, err := parseEntry(e)
		if err != nil {
			return nil, &entryError{index: i, err: err}
		}
		a := p.Addr()
		if a.Is4() {
			b := a.As4()
			lo := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
			hostBits := 32 - p.Bits()
			hi := lo
			if hostBits > 0 {
				hi = lo | (uint32(1)<<hostBits - 1)
			}
			s.v4 = append(s.v4, span4{lo, hi})
			continue
		}
		lo := toU128(a)
		hi := lo
		hostBits := 128 - p.Bits()
		switch {
		case hostBits >= 64:
			hi.lo = ^uint64(0)
			if hostBits == 128 {
				hi.hi = ^uint64(0)
			} else {
				hi.hi |= uint64(1)<<(hostBits-64) - 1
			}
		case hostBits > 0:
			hi.lo |= uint64(1)<<hostBits - 1
		}
		s.v6 = append(s.v6, span6{lo, hi})
	}
	s.v4 = merge4(s.v4)
	s.v6 = merge6(s.v6)
	return s, nil
}

type entryError struct {
	index int
	err   error
}

func (e *entryError) Error() string { return e.err.Error() }

func toU128(a netip.Addr) u128 {
	b := a.As16()
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[i+8])
	}
	return u128{hi, lo}
}

func merge4(in []span4) []span4 {
	if len(in) == 0 {
		return nil
	}
	slices.SortFunc(in, func(a, b span4) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	out := in[:1]
	for _, r := range in[1:] {
		last := &out[len(out)-1]
		if last.hi == ^uint32(0) {
			break // last reaches the top address: every later span is inside it
		}
		if r.lo > last.hi+1 { // a gap: new span (adjacent spans merge)
			out = append(out, r)
			continue
		}
		last.hi = max(last.hi, r.hi)
	}
	return slices.Clip(out)
}

func merge6(in []span6) []span6 {
	if len(in) == 0 {
		return nil
	}
	slices.SortFunc(in, func(a, b span6) int {
		switch {
		case a.lo.less(b.lo):
			return -1
		case b.lo.less(a.lo):
			return 1
		}
		return 0
	})
	out := in[:1]
	for _, r := range in[1:] {
		last := &out[len(out)-1]
		n, ok := last.hi.next()
		if !ok {
			break // last reaches the top address
		}
		if n.less(r.lo) {
			out = append(out, r)
			continue
		}
		if last.hi.less(r.hi) {
			last.hi = r.hi
		}
	}
	return slices.Clip(out)
}

// empty reports a set without entries.
func (s *ipSet) empty() bool { return s == nil || (len(s.v4) == 0 && len(s.v6) == 0) }

// contains reports whether a (already unmapped, see clientAddr) is in the set.
func (s *ipSet) contains(a netip.Addr) bool {
	if s == nil {
		return false
	}
	if a.Is4() {
		b := a.As4()
		x := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		// Find the last span with lo <= x.
		i, j := 0, len(s.v4)
		for i < j {
			m := int(uint(i+j) >> 1)
			if s.v4[m].lo <= x {
				i = m + 1
			} else {
				j = m
			}
		}
		return i > 0 && x <= s.v4[i-1].hi
	}
	x := toU128(a)
	i, j := 0, len(s.v6)
	for i < j {
		m := int(uint(i+j) >> 1)
		if !x.less(s.v6[m].lo) {
			i = m + 1
		} else {
			j = m
		}
	}
	return i > 0 && !s.v6[i-1].hi.less(x)
}
