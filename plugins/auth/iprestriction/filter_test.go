package iprestriction

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestNthFromRight(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		n     int
		want  string
		ok    bool
	}{
		{"last of one", []string{"1.1.1.1, 2.2.2.2"}, 1, "2.2.2.2", true},
		{"second from right", []string{"1.1.1.1, 2.2.2.2,3.3.3.3"}, 2, "2.2.2.2", true},
		{"across header lines", []string{"1.1.1.1, 2.2.2.2", "3.3.3.3"}, 3, "1.1.1.1", true},
		{"too few entries", []string{"1.1.1.1"}, 2, "", false},
		{"no header", nil, 1, "", false},
		{"empty entry", []string{"1.1.1.1,,3.3.3.3"}, 2, "", true},
		{"tabs and spaces", []string{" 1.1.1.1\t,\t2.2.2.2 "}, 2, "1.1.1.1", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := nthFromRight(tc.lines, tc.n)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("nthFromRight(%q, %d) = %q, %v; want %q, %v", tc.lines, tc.n, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestOnReceive(t *testing.T) {
	cases := []struct {
		name   string
		config string
		remote string
		xff    []string
		status int    // 0: passed on
		reason string // counter expected at 1
	}{
		{"allowed IPv4 in allow list", `{"allow":["10.0.0.0/8"]}`, "10.1.2.3:5555", nil, 0, "allowed"},
		{"IPv4 outside allow list", `{"allow":["10.0.0.0/8"]}`, "192.0.2.1:5555", nil, 403, "denied_not_allowed"},
		{"IPv4 in deny list", `{"deny":["192.0.2.0/24"]}`, "192.0.2.9:1", nil, 403, "denied_deny_list"},
		{"not in deny list passes", `{"deny":["192.0.2.0/24"]}`, "198.51.100.1:1", nil, 0, "allowed"},
		{"deny wins over allow", `{"allow":["10.0.0.0/8"],"deny":["10.0.0.1"]}`, "10.0.0.1:1", nil, 403, "denied_deny_list"},
		{"IPv6 downstream allowed", `{"allow":["2001:db8::/32"]}`, "[2001:db8::5]:443", nil, 0, "allowed"},
		{"IPv6 downstream denied", `{"allow":["2001:db8::/32"]}`, "[2001:db9::5]:443", nil, 403, "denied_not_allowed"},
		{"IPv4-mapped downstream matches IPv4 rule", `{"allow":["127.0.0.1"]}`, "[::ffff:127.0.0.1]:80", nil, 0, "allowed"},
		{"downstream without port", `{"allow":["127.0.0.1"]}`, "127.0.0.1", nil, 0, "allowed"},
		{"unparseable downstream (unix socket)", `{"deny":["10.0.0.0/8"]}`, "/tmp/sock", nil, 403, "denied_bad_address"},
		{"XFF ignored with 0 hops", `{"allow":["127.0.0.1"]}`, "127.0.0.1:1", []string{"192.0.2.1"}, 0, "allowed"},
		{"XFF first hop from the right", `{"allow":["192.0.2.1"],"xff_num_trusted_hops":1}`, "127.0.0.1:1", []string{"6.6.6.6, 192.0.2.1"}, 0, "allowed"},
		{"XFF spoofed left entry is ignored", `{"deny":["6.6.6.6"],"xff_num_trusted_hops":1}`, "127.0.0.1:1", []string{"6.6.6.6, 192.0.2.1"}, 0, "allowed"},
		{"XFF second hop from the right", `{"deny":["6.6.6.6"],"xff_num_trusted_hops":2}`, "127.0.0.1:1", []string{"6.6.6.6, 192.0.2.1"}, 403, "denied_deny_list"},
		{"XFF over two header lines", `{"deny":["6.6.6.6"],"xff_num_trusted_hops":2}`, "127.0.0.1:1", []string{"6.6.6.6", "192.0.2.1"}, 403, "denied_deny_list"},
		{"XFF IPv6 entry", `{"allow":["2001:db8::/32"],"xff_num_trusted_hops":1}`, "127.0.0.1:1", []string{"2001:db8::1"}, 0, "allowed"},
		{"XFF entry with port", `{"allow":["192.0.2.1"],"xff_num_trusted_hops":1}`, "127.0.0.1:1", []string{"192.0.2.1:8080"}, 0, "allowed"},
		{"missing XFF denied by default", `{"allow":["127.0.0.1"],"xff_num_trusted_hops":1}`, "127.0.0.1:1", nil, 403, "denied_bad_address"},
		{"short XFF denied by default", `{"deny":["6.6.6.6"],"xff_num_trusted_hops":3}`, "127.0.0.1:1", []string{"1.1.1.1,2.2.2.2"}, 403, "denied_bad_address"},
		{"malformed XFF denied by default", `{"deny":["6.6.6.6"],"xff_num_trusted_hops":1}`, "127.0.0.1:1", []string{"not-an-ip"}, 403, "denied_bad_address"},
		{"empty XFF entry denied", `{"deny":["6.6.6.6"],"xff_num_trusted_hops":2}`, "127.0.0.1:1", []string{"1.1.1.1,,2.2.2.2"}, 403, "denied_bad_address"},
		{"CRLF and unicode in XFF denied", `{"deny":["6.6.6.6"],"xff_num_trusted_hops":1}`, "127.0.0.1:1", []string{"1.1.1.1\r\n", "１.１.１.１"}, 403, "denied_bad_address"},
		{"oversized XFF is just malformed", `{"deny":["6.6.6.6"],"xff_num_trusted_hops":1}`, "127.0.0.1:1", []string{strings.Repeat("9", 64<<10)}, 403, "denied_bad_address"},
		{"malformed XFF falls back to remote_addr", `{"allow":["127.0.0.1"],"xff_num_trusted_hops":1,"xff_fallback":"remote_addr"}`, "127.0.0.1:1", []string{"garbage"}, 0, "allowed"},
		{"missing XFF falls back to remote_addr", `{"allow":["10.0.0.0/8"],"xff_num_trusted_hops":1,"xff_fallback":"remote_addr"}`, "127.0.0.1:1", nil, 403, "denied_not_allowed"},
		{"custom status and message", `{"deny":["0.0.0.0/0"],"status":401,"message":"go away"}`, "1.2.3.4:1", nil, 401, "denied_deny_list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, m := parse(t, tc.config)
			req := newReq()
			for _, v := range tc.xff {
				req.Add("x-forwarded-for", v)
			}
			ctx := newCtx(tc.remote, req)
			st := filterOf(c).OnReceive(ctx, req, nil, nil)
			switch {
			case tc.status == 0 && (st != api.Continue || ctx.Replied != nil):
				t.Fatalf("want pass, got %v reply %+v", st, ctx.Replied)
			case tc.status != 0 && (st != api.Stop || ctx.Replied == nil || ctx.Replied.Code != tc.status):
				t.Fatalf("want %d reply and Stop, got %v reply %+v", tc.status, st, ctx.Replied)
			}
			if tc.status != 0 {
				if want := c.Message; ctx.Replied.Body != want {
					t.Errorf("body %q, want %q", ctx.Replied.Body, want)
				}
			}
			if got := m.Count(tc.reason); got != 1 {
				t.Errorf("%s = %d, want 1 (counters %v)", tc.reason, got, m.Values())
			}
		})
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	cases := []struct {
		name, config, field, reason string
	}{
		{"nothing to check", `{}`, "allow", "at least one of allow or deny"},
		{"bad CIDR names index", `{"allow":["10.0.0.0/8","10.0.0.0/40"]}`, "allow[1]", "invalid CIDR"},
		{"bad IP in deny", `{"deny":["1.2.3"]}`, "deny[0]", "invalid IP address"},
		{"zone rejected", `{"deny":["fe80::1%eth0"]}`, "deny[0]", "no zone"},
		{"negative hops", `{"deny":["1.2.3.4"],"xff_num_trusted_hops":-1}`, "xff_num_trusted_hops", "between 0 and 64"},
		{"too many hops", `{"deny":["1.2.3.4"],"xff_num_trusted_hops":65}`, "xff_num_trusted_hops", "must be between 0 and 64, got 65"},
		{"bad fallback", `{"deny":["1.2.3.4"],"xff_fallback":"allow"}`, "xff_fallback", `must be one of deny, remote_addr, got "allow"`},
		{"bad status", `{"deny":["1.2.3.4"],"status":200}`, "status", "4xx or 5xx"},
		{"unknown field", `{"deny":["1.2.3.4"],"whitelist":["1.1.1.1"]}`, "whitelist", "unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}

func TestConcurrentRequestsShareOneFilter(t *testing.T) {
	c, m := parse(t, `{"allow":["10.0.0.0/8"]}`)
	f := filterOf(c)
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 500; i++ {
				remote := "10.0.0.1:1"
				if i%2 == 1 {
					remote = "192.0.2.1:1"
				}
				req := newReq()
				f.OnReceive(newCtx(remote, req), req, nil, nil)
			}
		}(g)
	}
	for g := 0; g < 8; g++ {
		<-done
	}
	if a, d := m.Count("allowed"), m.Count("denied_not_allowed"); a != 2000 || d != 2000 {
		t.Fatalf("allowed=%d denied=%d, want 2000 each", a, d)
	}
}
