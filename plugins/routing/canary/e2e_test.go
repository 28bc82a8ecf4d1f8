package canary_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

const example = "envoy/examples/canary.yaml"

// startExample runs the documented example with its second upstream (svc-v2,
// port 9002 in the file) on a test port, plus more substitutions.
func startExample(t *testing.T, replace map[string]string) *hosttest.Host {
	t.Helper()
	r := map[string]string{"port_value: 9002": fmt.Sprintf("port_value: %d", echo.Start(t, "echo-9002").Port)}
	for k, v := range replace {
		r[k] = v
	}
	return hosttest.StartExample(t, example, hosttest.ExampleOptions{Replace: r})
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}

// upstreamOf sends one request and returns the upstream that answered.
func upstreamOf(t *testing.T, h *hosttest.Host, kv ...string) (string, http.Header) {
	t.Helper()
	code, hdr, body := hosttest.Fetch(t, client, h.URL+"/", kv...)
	if code != 200 {
		t.Fatalf("%v: %d %q", kv, code, body)
	}
	return hdr.Get("x-upstream"), hdr
}

// The README's example and its "Try" lines.
func TestE2EExample(t *testing.T) {
	h := startExample(t, nil)
	up, hdr := upstreamOf(t, h, "x-user-id", "user-1")
	if up != "upstream" || hdr.Get("x-canary-target") != "stable" ||
		hdr.Get("set-cookie") != "moe_canary=stable; Max-Age=86400; Path=/; HttpOnly; SameSite=Lax" {
		t.Fatalf("user-1: %s %v", up, hdr)
	}
	if up, hdr = upstreamOf(t, h, "x-user-id", "user-28"); up != "echo-9002" || hdr.Get("x-canary-target") != "canary" {
		t.Fatalf("user-28: %s %v", up, hdr)
	}
	// The same user again, and by the uid cookie: same side.
	for i := 0; i < 5; i++ {
		if up, _ = upstreamOf(t, h, "cookie", "uid=user-28"); up != "echo-9002" {
			t.Fatalf("user-28 by cookie: %s", up)
		}
	}
	if up, hdr = upstreamOf(t, h, "x-canary", "canary"); up != "echo-9002" || hdr.Get("set-cookie") != "" {
		t.Fatalf("override: %s %v", up, hdr)
	}
	if up, _ = upstreamOf(t, h, "cookie", "canary=canary", "x-user-id", "user-1"); up != "echo-9002" {
		t.Fatalf("override cookie: %s", up)
	}
	if up, hdr = upstreamOf(t, h, "cookie", "moe_canary=canary", "x-user-id", "user-1"); up != "echo-9002" || hdr.Get("set-cookie") != "" {
		t.Fatalf("pinned by cookie: %s %v", up, hdr)
	}
	// A client-sent x-moe-cluster does not choose the cluster.
	if up, _ = upstreamOf(t, h, "x-user-id", "user-1", "x-moe-cluster", "svc-v2"); up != "upstream" {
		t.Fatalf("spoofed x-moe-cluster: %s", up)
	}
	// No user id: random by weight.
	n := map[string]int{}
	for i := 0; i < 200; i++ {
		up, _ := upstreamOf(t, h)
		n[up]++
	}
	if n["echo-9002"] < 5 || n["echo-9002"] > 45 {
		t.Errorf("200 requests without a user id: %v, want ~20 on the canary", n)
	}
	if got := h.Counter(t, "moe_canary_by_override"); got != 2 {
		t.Errorf("by_override = %d", got)
	}
	if got := h.Counter(t, "moe_canary_by_cookie"); got != 1 {
		t.Errorf("by_cookie = %d", got)
	}
	if s, c := h.Counter(t, "moe_canary_target_stable"), h.Counter(t, "moe_canary_target_canary"); s+c != 211 {
		t.Errorf("target_stable %d + target_canary %d, want 211", s, c)
	}
}

// Moving the canary from 10% to 20% through moe-host: the users that switch
// are exactly those that must (about 10% of all), all from stable to canary.
func TestE2EWeightChangeMovesOnlyTheUsersThatMust(t *testing.T) {
	const users = 300
	sides := func(h *hosttest.Host) []string {
		out := make([]string, users)
		for u := range out {
			out[u], _ = upstreamOf(t, h, "x-user-id", fmt.Sprintf("user-%d", u))
		}
		return out
	}
	at10 := startExample(t, nil)
	before := sides(at10)
	at10.Stop(t)
	at20 := startExample(t, map[string]string{"cluster: svc-v1, weight: 90": "cluster: svc-v1, weight: 80", "cluster: svc-v2, weight: 10": "cluster: svc-v2, weight: 20"})
	after := sides(at20)
	toCanary, back, onCanary := 0, 0, 0
	for u := range before {
		if after[u] == "echo-9002" {
			onCanary++
		}
		switch {
		case before[u] == "upstream" && after[u] == "echo-9002":
			toCanary++
		case before[u] == "echo-9002" && after[u] == "upstream":
			back++
		}
	}
	t.Logf("10%% -> 20%% through moe-host: %d of %d users switched to the canary, %d back; %d now on the canary", toCanary, users, back, onCanary)
	if back != 0 {
		t.Errorf("%d users moved from the canary back to stable", back)
	}
	if toCanary < users*4/100 || toCanary > users*16/100 {
		t.Errorf("%d of %d users switched, want about 10%%", toCanary, users)
	}
}

// A target whose cluster is not in Envoy's route table: Envoy answers 503
// (cluster_not_found), the plugin counts it; other targets are unaffected.
func TestE2EMissingCluster(t *testing.T) {
	h := startExample(t, map[string]string{"{name: canary, cluster: svc-v2, weight: 10}": "{name: canary, cluster: svc-v9, weight: 10}"})
	code, _, body := hosttest.Fetch(t, client, h.URL+"/", "x-canary", "canary")
	if code != 503 || body != "" {
		t.Fatalf("missing cluster: %d %q, want Envoy's empty 503", code, body)
	}
	if up, _ := upstreamOf(t, h, "x-user-id", "user-1"); up != "upstream" {
		t.Fatalf("stable: %s", up)
	}
	if n := h.Counter(t, "moe_canary_cluster_not_found"); n != 1 {
		t.Errorf("cluster_not_found = %d", n)
	}
	if !strings.Contains(h.Output(), "Envoy has no cluster for target canary") {
		t.Errorf("no warning naming the target in the host log")
	}
}

// A target whose hosts are all down gets Envoy's 503; the plugin keeps the
// user where the hash put them (it has no view of health: see README).
func TestE2ETargetDown(t *testing.T) {
	down := fmt.Sprintf("port_value: %d", hosttest.ClosedPort(t))
	h := hosttest.StartExample(t, example, hosttest.ExampleOptions{Replace: map[string]string{"port_value: 9002": down}})
	code, _, body := hosttest.Fetch(t, client, h.URL+"/", "x-user-id", "user-28")
	if code != 503 || !strings.Contains(body, "upstream connect error") {
		t.Fatalf("canary down: %d %q", code, body)
	}
	if up, _ := upstreamOf(t, h, "x-user-id", "user-1"); up != "upstream" {
		t.Fatalf("stable: %s", up)
	}
	// Every target down.
	h.Stop(t)
	h = hosttest.StartExample(t, example, hosttest.ExampleOptions{Replace: map[string]string{
		"port_value: 9002": down,
		// The example's own upstream port is substituted first: replace it with its context.
		svcV1Endpoint: strings.Replace(svcV1Endpoint, "port_value: 8080", fmt.Sprintf("port_value: %d", hosttest.ClosedPort(t)), 1)}})
	for _, u := range []string{"user-1", "user-28"} {
		if code, _, _ := hosttest.Fetch(t, client, h.URL+"/", "x-user-id", u); code != 503 {
			t.Fatalf("%s with every target down: %d", u, code)
		}
	}
}

// Bad input through the real host: a huge user id, repeated user ids,
// malformed cookies, an unknown override. Each gets a 200 from a known side.
func TestE2EBadInput(t *testing.T) {
	h := startExample(t, nil)
	// 8 KiB user id: longer than max_key_length (256), ignored: random side.
	code, hdr, _ := hosttest.Fetch(t, client, h.URL+"/", "x-user-id", strings.Repeat("u", 8192))
	if code != 200 || (hdr.Get("x-canary-target") != "stable" && hdr.Get("x-canary-target") != "canary") {
		t.Fatalf("huge key: %d %v", code, hdr)
	}
	if n := h.Counter(t, "moe_canary_invalid_key"); n != 1 {
		t.Errorf("invalid_key = %d", n)
	}
	// Repeated x-user-id: the first value counts.
	resp, _ := hosttest.Get(t, h.URL+"/", "x-user-id", "user-28", "x-user-id", "user-1")
	if resp.Header.Get("x-upstream") != "echo-9002" {
		t.Fatalf("repeated user id: %v", resp.Header)
	}
	resp.Body.Close()
	// Malformed cookie lines; the uid cookie still found in the second line.
	resp, _ = hosttest.Get(t, h.URL+"/", "cookie", ";;=;moe_canary;==", "cookie", "uid=user-28")
	if resp.StatusCode != 200 || resp.Header.Get("x-upstream") != "echo-9002" {
		t.Fatalf("malformed cookies: %d %v", resp.StatusCode, resp.Header)
	}
	resp.Body.Close()
	if up, _ := upstreamOf(t, h, "x-canary", "../../etc", "x-user-id", "user-1"); up != "upstream" {
		t.Fatalf("unknown override: %s", up)
	}
	if n := h.Counter(t, "moe_canary_override_unknown"); n != 1 {
		t.Errorf("override_unknown = %d", n)
	}
}

// Pinning a version's host inside one cluster (Envoy's upstream override
// host) instead of choosing a cluster.
func TestE2EHostsInsideOneCluster(t *testing.T) {
	v1, v2 := echo.Start(t, "v1"), echo.Start(t, "v2")
	h := hosttest.Start(t, hostsBootstrap, hosttest.Vars{"V1": v1.Port, "V2": v2.Port})
	n := map[string]int{}
	for u := 0; u < 100; u++ {
		user := fmt.Sprintf("user-%d", u)
		first, _ := upstreamOf(t, h, "x-user-id", user)
		again, _ := upstreamOf(t, h, "x-user-id", user)
		if first != again {
			t.Fatalf("%s went to %s then %s", user, first, again)
		}
		n[first]++
	}
	if n["v2"] < 35 || n["v2"] > 65 {
		t.Errorf("50/50 by host: %v", n)
	}
	if up, _ := upstreamOf(t, h, "x-canary", "v2"); up != "v2" {
		t.Errorf("override to v2: %s", up)
	}
}

const svcV1Endpoint = `cluster_name: svc-v1
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: {address: 127.0.0.1, port_value: 8080}`

const hostsBootstrap = `
admin:
  address:
    socket_address: {address: 127.0.0.1, port_value: {{.AdminPort}}}
static_resources:
  listeners:
  - name: l
    address:
      socket_address: {address: 127.0.0.1, port_value: {{.Port}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: l
          http_filters:
          - name: envoy.filters.http.golang
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
              library_id: moe
              library_path: {{.Library}}
              plugin_name: moe
              plugin_config:
                "@type": type.googleapis.com/xds.type.v3.TypedStruct
                value:
                  plugins:
                  - name: canary
                    config:
                      keys: ["$header_x-user-id"]
                      cluster_header: ""
                      target_header: x-version
                      override: {header: x-canary}
                      targets:
                      - {name: v1, weight: 50, hosts: ["127.0.0.1:{{.V1}}"]}
                      - {name: v2, weight: 50, hosts: ["127.0.0.1:{{.V2}}"], strict: true}
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
          route_config:
            name: r
            virtual_hosts:
            - name: v
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: svc}
  clusters:
  - name: svc
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: svc
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: {address: 127.0.0.1, port_value: {{.V1}}}
        - endpoint:
            address:
              socket_address: {address: 127.0.0.1, port_value: {{.V2}}}
`
