package hostbalance

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/variables"
)

const threeHosts = `"hosts": [{"address": "127.0.0.1:9001"}, {"address": "127.0.0.1:9002"}, {"address": "127.0.0.1:9003"}]`

// upstreamCtx is a fakeframework context whose request info reports the
// upstream host Envoy connected to (the fake reports none).
type upstreamCtx struct {
	*fakeframework.Context
	upstream string
}

type upstreamSender struct {
	api.SenderFilterHandler
	info api.RequestInfo
}

type upstreamInfo struct {
	api.RequestInfo
	upstream string
}

func (c *upstreamCtx) Sender() api.SenderFilterHandler {
	return upstreamSender{c.Context.Sender(), upstreamInfo{c.Context.Sender().RequestInfo(), c.upstream}}
}
func (s upstreamSender) RequestInfo() api.RequestInfo { return s.info }
func (i upstreamInfo) UpstreamHost() string           { return i.upstream }

// request runs one request through a new filter of c: OnReceive, then (if
// status > 0) Append with that status and upstream host, then Log.
func request(t *testing.T, c *Config, status int, upstream, details string) (*filter, *fakeframework.Context) {
	t.Helper()
	f := &filter{c: c}
	req := fakeframework.NewRequest("GET", "/", "x-user", "alice")
	fc := fakeframework.NewContext(Name, req)
	if details != "" {
		fc.Properties = map[string]string{"response.code_details": details}
	}
	ctx := &upstreamCtx{fc, upstream}
	if st := f.OnReceive(ctx, req, nil, nil); st != api.Continue {
		t.Fatalf("OnReceive: %v", st)
	}
	if status > 0 {
		resp := fakeframework.NewResponse(status)
		fc.WithResponse(resp)
		f.Append(ctx, resp, nil, nil)
	}
	return f, fc
}

func TestRequestsArePinnedInTurn(t *testing.T) {
	c, env := parse(t, `{`+threeHosts+`}`)
	seen := map[string]int{}
	for i := 0; i < 6; i++ {
		f, ctx := request(t, c, 200, "", "")
		if ctx.OverrideHost == "" || f.h == nil || ctx.OverrideHost != f.h.addr {
			t.Fatalf("override %q, filter host %v", ctx.OverrideHost, f.h)
		}
		if v, ok := variables.Lookup(ctx, "$host_balance_host"); !ok || v != ctx.OverrideHost {
			t.Fatalf("$host_balance_host = %q %v", v, ok)
		}
		seen[ctx.OverrideHost]++
		if f.h.active.Load() != 1 {
			t.Fatalf("active %d while in flight", f.h.active.Load())
		}
		h := f.h
		f.Log(ctx, nil, nil, nil)
		if h.active.Load() != 0 {
			t.Fatalf("active %d after the log", h.active.Load())
		}
	}
	for _, a := range []string{"127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"} {
		if seen[a] != 2 || env.Count("picked_"+metricSuffix(a)) != 2 {
			t.Fatalf("%s: %d picks, metric %d (all %v)", a, seen[a], env.Count("picked_"+metricSuffix(a)), env.Values())
		}
	}
}

func TestResponsesAreClassified(t *testing.T) {
	for _, tc := range []struct {
		name, upstream, details string
		status                  int
		want                    outcome
	}{
		{"upstream 200", "PINNED", "", 200, success},
		{"upstream 404", "PINNED", "", 404, success},
		{"upstream 503", "PINNED", "", 503, failure},
		{"connect failure", "", "upstream_reset_before_response_started{remote_connection_failure}", 503, failure},
		{"timeout", "", "upstream_response_timeout", 504, failure},
		{"a later plugin's 429", "", "", 429, neutral},
		{"a later plugin's 503", "", "moe_reply", 503, neutral},
		{"no healthy upstream", "", "no_healthy_upstream", 503, neutral},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := parse(t, `{`+threeHosts+`, "strategy": "peak-ewma", "outlier_detection": {"consecutive_failures": 1}}`)
			up := tc.upstream
			f2 := &filter{c: c}
			req := fakeframework.NewRequest("GET", "/")
			fc := fakeframework.NewContext(Name, req)
			if tc.details != "" {
				fc.Properties = map[string]string{"response.code_details": tc.details}
			}
			uc := &upstreamCtx{fc, ""}
			f2.OnReceive(uc, req, nil, nil)
			if up == "PINNED" {
				uc.upstream = f2.h.addr
			}
			resp := fakeframework.NewResponse(tc.status)
			f2.Append(uc, resp, nil, nil)
			h := f2.h
			_, _, sampled := h.estimate(monoNow(), c.bal.opts.tau)
			ejected := !h.available(monoNow())
			switch tc.want {
			case success:
				if !sampled || ejected {
					t.Fatalf("success: sampled %v ejected %v", sampled, ejected)
				}
			case failure:
				if !sampled || !ejected {
					t.Fatalf("failure: sampled %v ejected %v", sampled, ejected)
				}
			case neutral:
				if sampled || ejected {
					t.Fatalf("neutral: sampled %v ejected %v", sampled, ejected)
				}
			}
			f2.Log(uc, nil, nil, nil)
			if h.active.Load() != 0 {
				t.Fatalf("active %d", h.active.Load())
			}
		})
	}
}

func TestOverrideMissedFeedsTheHostEnvoyChose(t *testing.T) {
	c, env := parse(t, `{`+threeHosts+`, "strategy": "peak-ewma"}`)
	f := &filter{c: c}
	req := fakeframework.NewRequest("GET", "/")
	fc := fakeframework.NewContext(Name, req)
	uc := &upstreamCtx{fc, ""}
	f.OnReceive(uc, req, nil, nil)
	other := "127.0.0.1:9001"
	if f.h.addr == other {
		other = "127.0.0.1:9002"
	}
	uc.upstream = other
	f.Append(uc, fakeframework.NewResponse(200), nil, nil)
	if env.Count("override_missed") != 1 {
		t.Fatalf("override_missed %d", env.Count("override_missed"))
	}
	if _, _, ok := c.bal.set.Load().byAddr[other].estimate(monoNow(), c.bal.opts.tau); !ok {
		t.Fatal("the host Envoy chose got no sample")
	}
	if _, _, ok := f.h.estimate(monoNow(), c.bal.opts.tau); ok {
		t.Fatal("the pinned host got the sample")
	}
	f.Log(uc, nil, nil, nil)
}

func TestAbortedRequestsReportTheirDuration(t *testing.T) {
	c, _ := parse(t, `{`+threeHosts+`, "strategy": "peak-ewma"}`)
	f, ctx := request(t, c, 0, "", "")
	h := f.h
	time.Sleep(2 * time.Millisecond)
	f.Log(ctx, nil, nil, nil)
	lat, succ, ok := h.estimate(monoNow(), c.bal.opts.tau)
	if !ok || lat < float64(time.Millisecond) || succ != 1 || h.active.Load() != 0 {
		t.Fatalf("after an aborted request: lat %v succ %v ok %v active %d", time.Duration(lat), succ, ok, h.active.Load())
	}
}

func TestFallbacksLeaveTheRequestToEnvoy(t *testing.T) {
	t.Run("every host ejected", func(t *testing.T) {
		c, env := parse(t, `{`+threeHosts+`, "outlier_detection": {"consecutive_failures": 1}}`)
		for _, h := range c.bal.set.Load().hosts {
			c.bal.feedback(h, monoNow(), 1, failure)
		}
		_, ctx := request(t, c, 0, "", "")
		if ctx.OverrideHost != "" || env.Count("fallback_all_ejected") != 1 {
			t.Fatalf("override %q, fallback %d", ctx.OverrideHost, env.Count("fallback_all_ejected"))
		}
		for _, h := range c.bal.set.Load().hosts {
			if env.Count("ejections_"+metricSuffix(h.addr)) != 1 || env.Count("failures_"+metricSuffix(h.addr)) != 1 {
				t.Fatalf("metrics %v", env.Values())
			}
		}
	})
	t.Run("another cluster", func(t *testing.T) {
		c, env := parse(t, `{`+threeHosts+`, "cluster": "backend"}`)
		req := fakeframework.NewRequest("GET", "/")
		ctx := fakeframework.NewContext(Name, req)
		ctx.Cluster = "other"
		f := &filter{c: c}
		f.OnReceive(ctx, req, nil, nil)
		f.Log(ctx, nil, nil, nil)
		if ctx.OverrideHost != "" || env.Count("skipped_other_cluster") != 1 {
			t.Fatalf("override %q skipped %d", ctx.OverrideHost, env.Count("skipped_other_cluster"))
		}
		ctx = fakeframework.NewContext(Name, req)
		ctx.Cluster = "backend"
		f = &filter{c: c}
		f.OnReceive(ctx, req, nil, nil)
		if ctx.OverrideHost == "" {
			t.Fatal("not pinned on its cluster")
		}
	})
	t.Run("dns resolved nothing", func(t *testing.T) {
		c, env := parse(t, `{"dns": {"name": "localhost", "port": 9001}}`)
		c.bal.setHosts(nil, nil)
		_, ctx := request(t, c, 0, "", "")
		if ctx.OverrideHost != "" || env.Count("fallback_no_hosts") != 1 {
			t.Fatalf("override %q no_hosts %d", ctx.OverrideHost, env.Count("fallback_no_hosts"))
		}
	})
}

func TestConsistentHashOnAVariable(t *testing.T) {
	c, env := parse(t, `{`+threeHosts+`, "strategy": "consistent-hash", "hash": {"key": "$header_x-user", "algorithm": "maglev"}}`)
	pin := func(user string) string {
		req := fakeframework.NewRequest("GET", "/")
		if user != "" {
			req = fakeframework.NewRequest("GET", "/", "x-user", user)
		}
		ctx := fakeframework.NewContext(Name, req)
		f := &filter{c: c}
		f.OnReceive(ctx, req, nil, nil)
		f.Log(ctx, nil, nil, nil)
		return ctx.OverrideHost
	}
	users := map[string]bool{}
	for i := 0; i < 30; i++ {
		u := "user-" + strings.Repeat("x", i)
		first := pin(u)
		if pin(u) != first {
			t.Fatalf("%s moved", u)
		}
		users[first] = true
	}
	if len(users) != 3 {
		t.Fatalf("30 users on %d hosts", len(users))
	}
	if pin("") == "" || env.Count("hash_key_empty") != 1 {
		t.Fatalf("no key: hash_key_empty %d", env.Count("hash_key_empty"))
	}
}

func TestDNSHostsFollowTheName(t *testing.T) {
	// Init resolves localhost (tests resolve nothing else); the fake lookup
	// answers from then on.
	c, env := parse(t, `{"dns": {"name": "localhost", "port": 8080, "refresh": "1h"}, "strategy": "peak-ewma"}`)
	r := c.dns
	answers := make(chan []netip.Addr, 10)
	var fail error
	r.lookup = func(_ context.Context, name string) ([]netip.Addr, error) {
		if fail != nil {
			return nil, fail
		}
		return <-answers, nil
	}
	addrs := func() []string {
		var out []string
		for _, h := range c.bal.set.Load().hosts {
			out = append(out, h.addr)
		}
		return out
	}
	answers <- []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.1")}
	if err := r.resolveOnce(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(addrs(), ","); got != "127.0.0.1:8080,127.0.0.2:8080" {
		t.Fatalf("v4_preferred: %s", got)
	}
	kept := c.bal.set.Load().byAddr["127.0.0.1:8080"]
	c.bal.feedback(kept, monoNow(), 5e6, success)
	answers <- []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.3")}
	r.resolveOnce()
	if got := strings.Join(addrs(), ","); got != "127.0.0.1:8080,127.0.0.3:8080" {
		t.Fatalf("after the change: %s", got)
	}
	if c.bal.set.Load().byAddr["127.0.0.1:8080"] != kept {
		t.Fatal("a host that stayed lost its state")
	}
	fail = errors.New("no such host")
	if err := r.resolveOnce(); err == nil || len(addrs()) != 2 {
		t.Fatalf("a failed resolution: %v, hosts %v", err, addrs())
	}
	if env.Count("dns_failures") != 1 || env.Count("dns_resolutions") != 3 {
		t.Fatalf("metrics %v", env.Values())
	}
	for _, tc := range []struct{ family, want string }{
		{"v6_only", "[::1]:1"}, {"v4_only", "127.0.0.1:1"}, {"all", "127.0.0.1:1,[::1]:1"}, {"v6_preferred", "[::1]:1"},
	} {
		got := pickFamily([]netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("::ffff:127.0.0.1"), netip.MustParseAddr("127.0.0.1")}, tc.family)
		var s []string
		for _, a := range got {
			s = append(s, netip.AddrPortFrom(a, 1).String())
		}
		if strings.Join(s, ",") != tc.want {
			t.Fatalf("%s: %v, want %s", tc.family, s, tc.want)
		}
	}
}

func TestDNSLocalhostAndDestroy(t *testing.T) {
	c, _ := parse(t, `{"dns": {"name": "localhost", "port": 8080, "refresh": "100ms"}}`)
	if n := len(c.bal.set.Load().hosts); n == 0 {
		t.Fatal("localhost resolved to nothing")
	}
	for _, h := range c.bal.set.Load().hosts {
		if h.addr != "127.0.0.1:8080" && h.addr != "[::1]:8080" {
			t.Fatalf("localhost gave %s", h.addr)
		}
	}
	c.Destroy()
	select {
	case <-c.dns.done:
	case <-time.After(2 * time.Second):
		t.Fatal("the resolver did not stop on Destroy")
	}
	c.Destroy() // twice is fine
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "hosts", "is required"},
		{`{"hosts": [{"address": "10.0.0.1:80"}], "dns": {"name": "x", "port": 1}}`, "dns", "not both"},
		{`{"hosts": [{"address": "backend:80"}]}`, "hosts[0].address", "not ip:port"},
		{`{"hosts": [{"address": "10.0.0.1"}]}`, "hosts[0].address", "not ip:port"},
		{`{"hosts": [{"address": "10.0.0.1:80"}, {"address": "10.0.0.1:80"}]}`, "hosts[1].address", "also hosts[0]"},
		{`{"hosts": [{"address": "10.0.0.1:80", "weight": -1}]}`, "hosts[0].weight", "between 0 and 10000"},
		{`{"hosts": [{"address": "10.0.0.1:80", "wieght": 2}]}`, "hosts[0].wieght", "unknown field"},
		{`{"dns": {"name": "http://x", "port": 80}}`, "dns.name", "host name"},
		{`{"dns": {"name": "x", "port": 0}}`, "dns.port", "between 1 and 65535"},
		{`{"dns": {"name": "x", "port": 80, "refresh": "1ms"}}`, "dns.refresh", "between"},
		{`{"dns": {"name": "x", "port": 80, "family": "v5"}}`, "dns.family", "must be one of"},
		{`{"hosts": [{"address": "10.0.0.1:80"}], "strategy": "fastest"}`, "strategy", "must be one of"},
		{`{"hosts": [{"address": "10.0.0.1:80"}], "strategy": "consistent-hash"}`, "hash.key", "is required"},
		{`{"hosts": [{"address": "10.0.0.1:80"}], "hash": {"key": "$nope"}}`, "hash.key", "unknown variable"},
		{`{"hosts": [{"address": "10.0.0.1:80"}], "hash": {"table_size": 65536}}`, "hash.table_size", "prime"},
		{`{"hosts": [{"address": "10.0.0.1:80"}], "hash": {"algorithm": "jump"}}`, "hash.algorithm", "must be one of"},
		{`{"hosts": [{"address": "10.0.0.1:80"}], "choices": 1}`, "choices", "between 2 and 10"},
		{`{"hosts": [{"address": "10.0.0.1:80"}], "active_request_bias": -1}`, "active_request_bias", "between"},
		{`{"hosts": [{"address": "10.0.0.1:80"}], "peak_ewma": {"decay": "0s"}}`, "peak_ewma.decay", "between"},
		{`{"hosts": [{"address": "10.0.0.1:80"}], "outlier_detection": {"max_ejection_time": "1s"}}`, "outlier_detection.max_ejection_time", "at least base_ejection_time"},
		{`{"hosts": [{"address": "10.0.0.1:80"}], "outlier_detection": {"consecutive_failures": -1}}`, "outlier_detection.consecutive_failures", "between"},
	} {
		t.Run(tc.field+" "+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
			fakeframework.WantCheckError(t, Name, tc.config, tc.field, tc.reason) // moectl validate
		})
	}
}
