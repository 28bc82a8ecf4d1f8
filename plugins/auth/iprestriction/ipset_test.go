package iprestriction

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
)

func TestIPSetContains(t *testing.T) {
	cases := []struct {
		name    string
		entries []string
		in, out []string
	}{
		{"single IPv4", []string{"192.0.2.7"}, []string{"192.0.2.7"}, []string{"192.0.2.6", "192.0.2.8", "::ffff:192.0.2.6"}},
		{"IPv4 CIDR bounds", []string{"10.0.0.0/8"}, []string{"10.0.0.0", "10.255.255.255", "10.1.2.3"}, []string{"9.255.255.255", "11.0.0.0"}},
		{"host bits are masked", []string{"10.1.2.3/16"}, []string{"10.1.0.0", "10.1.255.255"}, []string{"10.2.0.0"}},
		{"overlapping and adjacent spans merge", []string{"10.0.0.0/24", "10.0.1.0/24", "10.0.0.128/25", "10.0.3.0/24"}, []string{"10.0.0.5", "10.0.1.255", "10.0.3.1"}, []string{"10.0.2.0", "10.0.4.0"}},
		{"all IPv4", []string{"0.0.0.0/0", "1.2.3.4"}, []string{"0.0.0.0", "255.255.255.255"}, []string{"::1"}},
		{"single IPv6", []string{"2001:db8::1"}, []string{"2001:db8::1"}, []string{"2001:db8::2", "2001:db8::"}},
		{"IPv6 CIDR crossing the 64-bit half", []string{"2001:db8::/32"}, []string{"2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"}, []string{"2001:db9::", "2001:db7:ffff::"}},
		{"IPv6 /72", []string{"2001:db8:0:0:ab00::/72"}, []string{"2001:db8::ab00:0:0:0", "2001:db8::abff:ffff:ffff:ffff"}, []string{"2001:db8::ac00:0:0:0"}},
		{"all IPv6", []string{"::/0", "2001:db8::/32"}, []string{"::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"}, []string{"1.2.3.4"}},
		{"IPv4-mapped entry is IPv4", []string{"::ffff:192.0.2.0/120"}, []string{"192.0.2.1"}, []string{"192.0.3.1"}},
		{"IPv4 does not match IPv6 ranges", []string{"::/96"}, []string{"::1"}, []string{"0.0.0.1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newIPSet(tc.entries)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range tc.in {
				if ip, _ := parseIP(a); !s.contains(ip) {
					t.Errorf("%s not in %v", a, tc.entries)
				}
			}
			for _, a := range tc.out {
				if ip, _ := parseIP(a); s.contains(ip) {
					t.Errorf("%s unexpectedly in %v", a, tc.entries)
				}
			}
		})
	}
}

// TestIPSetMatchesPrefixContains cross-checks the interval table against
// netip.Prefix.Contains on random data.
func TestIPSetMatchesPrefixContains(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	randAddr := func(v6 bool) netip.Addr {
		if v6 {
			var b [16]byte
			b[0], b[1] = 0x20, 0x01 // keep them dense enough to hit
			for i := 2; i < 16; i++ {
				b[i] = byte(r.IntN(4))
			}
			return netip.AddrFrom16(b)
		}
		return netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256))})
	}
	for round := 0; round < 50; round++ {
		var prefixes []netip.Prefix
		var entries []string
		for i := 0; i < 20; i++ {
			v6 := r.IntN(2) == 0
			a := randAddr(v6)
			bits := 8 + r.IntN(25)
			if v6 {
				bits = 16 + r.IntN(113)
			}
			p := netip.PrefixFrom(a, bits).Masked()
			prefixes = append(prefixes, p)
			entries = append(entries, p.String())
		}
		s, err := newIPSet(entries)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2000; i++ {
			a := randAddr(r.IntN(2) == 0)
			want := false
			for _, p := range prefixes {
				want = want || p.Contains(a)
			}
			if got := s.contains(a); got != want {
				t.Fatalf("round %d: contains(%s)=%v, want %v; entries %v", round, a, got, want, entries)
			}
		}
	}
}

func TestParseEntryErrors(t *testing.T) {
	for _, e := range []string{"", "10.0.0.0/33", "300.1.1.1", "fe80::1%eth0", "::ffff:1.2.3.4/64", "10.0.0.0/-1", "example.com", "1.2.3.4\r\n"} {
		t.Run(fmt.Sprintf("%q", e), func(t *testing.T) {
			if _, err := parseEntry(e); err == nil {
				t.Fatalf("parseEntry(%q) accepted", e)
			}
		})
	}
}
