package iprestriction

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
)

// referenceNth is X-Forwarded-For read plainly: all lines joined with ","
// (one list split over several header lines, RFC 9110 5.3), split at
// commas, the nth entry from the right, trimmed.
func referenceNth(lines []string, n int) (string, bool) {
	if len(lines) == 0 || n < 1 {
		return "", false
	}
	parts := strings.Split(strings.Join(lines, ","), ",")
	if n > len(parts) {
		return "", false
	}
	return strings.Trim(parts[len(parts)-n], " \t"), true
}

// referenceIP: an address with an optional port, as net/netip reads it.
func referenceIP(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.WithZone("").Unmap(), true
	}
	return netip.Addr{}, false
}

// FuzzXFF: X-Forwarded-For handling (a "\n" separates header lines).
// nthFromRight and parseIP agree with the plain readings above, and the
// plugin (trusting 1 to 3 hops, allow 10.0.0.0/8 and 2001:db8::/32, deny
// 10.9.0.0/16, falling back to nothing) lets a request through only when
// the reference picks an allowed address.
func FuzzXFF(f *testing.F) {
	for _, s := range []string{
		"10.1.2.3", "203.0.113.7, 10.1.2.3", "10.1.2.3,203.0.113.7", "10.9.0.1", "[2001:db8::1]:443, 1.1.1.1",
		"10.1.2.3:80", "::ffff:10.1.2.3", "fe80::1%eth0", "10.1.2.3\n203.0.113.7", " , ,", "", "10.1.2.3 ,\t10.2.3.4",
		"010.1.2.3", "10.1.2.3.", "2001:db8::1%25x",
	} {
		f.Add(s, uint8(1))
		f.Add(s, uint8(2))
	}
	cfgs := map[int]*Config{}
	for hops := 1; hops <= 3; hops++ {
		c, _ := fakeframeworkParse(f, hops)
		cfgs[hops] = c
	}
	allow := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}
	deny := netip.MustParsePrefix("10.9.0.0/16")
	f.Fuzz(func(t *testing.T, header string, hops uint8) {
		if len(header) > 8192 {
			t.Skip()
		}
		n := int(hops%3) + 1
		var lines []string
		if header != "" {
			lines = strings.Split(header, "\n")
		}
		got, ok := nthFromRight(lines, n)
		want, wok := referenceNth(lines, n)
		if got != want || ok != wok {
			t.Fatalf("nthFromRight(%q, %d) = %q, %v; reference %q, %v", lines, n, got, ok, want, wok)
		}
		a, aok := parseIP(got)
		ra, raok := referenceIP(got)
		if aok != raok || a != ra {
			t.Fatalf("parseIP(%q) = %v, %v; reference %v, %v", got, a, aok, ra, raok)
		}
		kv := make([]string, 0, 2*len(lines))
		for _, l := range lines {
			kv = append(kv, "x-forwarded-for", l)
		}
		ctx := newCtx("192.0.2.1:5555", newReq(kv...))
		st := filterOf(cfgs[n]).OnReceive(ctx, ctx.Req, nil, nil)
		allowed := ok && raok && !deny.Contains(ra) && (allow[0].Contains(ra) || allow[1].Contains(ra))
		if (st == api.Continue) != allowed {
			t.Fatalf("XFF %q (hops %d): status %v, the reference picks %v (%v): allowed %v", lines, n, st, ra, raok, allowed)
		}
		if st != api.Continue && (ctx.Replied == nil || ctx.Replied.Body != cfgs[n].Message) {
			t.Fatalf("refusal %+v: want the configured message, never the address", ctx.Replied)
		}
	})
}

func fakeframeworkParse(f *testing.F, hops int) (*Config, any) {
	c, env := parse(f, fmt.Sprintf(`{"allow":["10.0.0.0/8","2001:db8::/32"],"deny":["10.9.0.0/16"],"xff_num_trusted_hops":%d}`, hops))
	return c, env
}
