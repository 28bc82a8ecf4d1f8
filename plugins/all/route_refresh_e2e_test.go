package all_test

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// After a BeforeRoute plugin changes what routing reads, the framework makes
// Envoy match the route again before the AfterRoute plugins run: they, and
// $route_name, see the new route, not the one matched on arrival.
const refreshBootstrap = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: {{.AdminPort}}}}
static_resources:
  listeners:
  - name: refresh
    address: {socket_address: {address: 127.0.0.1, port_value: {{.Port}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: refresh
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
                  - name: traffic-route
                    config:
                      rules:
                      - match: {headers: [{name: x-beta, exact: "1"}]}
                        name: beta
                        set_headers: [{name: x-lane, value: beta}]
                  - name: header-mutation
                    config:
                      request: [{op: set, name: x-seen-route, value: "$route_name"}]
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          route_config:
            name: refresh
            virtual_hosts:
            - name: refresh
              domains: ["*"]
              routes:
              - name: beta-lane
                match: {prefix: /, headers: [{name: x-lane, string_match: {exact: beta}}]}
                route: {cluster: upstream}
              - name: main-lane
                match: {prefix: /}
                route: {cluster: upstream}
  clusters:
  - name: upstream
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: upstream
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: {{.UpstreamPort}}}}}
`

func TestAfterRoutePluginsSeeTheRouteMatchedAgain(t *testing.T) {
	h := hosttest.Start(t, refreshBootstrap, hosttest.Vars{"UpstreamPort": hosttest.EchoUpstream(t)})
	for _, tc := range []struct {
		hdr  []string
		want string
	}{{nil, "main-lane"}, {[]string{"x-beta", "1"}, "beta-lane"}} {
		resp, body := hosttest.Get(t, h.URL+"/x", tc.hdr...)
		if resp.StatusCode != 200 {
			t.Fatalf("%v: %d %s", tc.hdr, resp.StatusCode, body)
		}
		if got := hosttest.DecodeEcho(t, resp).Header("x-seen-route"); got != tc.want {
			t.Errorf("%v: an AfterRoute plugin saw $route_name %q, want %q", tc.hdr, got, tc.want)
		}
	}
}
