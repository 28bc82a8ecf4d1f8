package all_test

import (
	"net/http"
	"testing"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// Every plugin is also a golang filter of its own name. With key-auth,
// consumer-restriction and limit-req as three separate golang filters, the
// consumer key-auth identifies must reach the later filters (through Envoy's
// filter state, as between Envoy filters): consumer-restriction decides on it
// and limit-req counts per $consumer.
const separateFilters = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: {{.AdminPort}}}}
static_resources:
  listeners:
  - name: separate
    address: {socket_address: {address: 127.0.0.1, port_value: {{.Port}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: separate
          http_filters:
          - name: moe.key-auth
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
              library_id: moe
              library_path: {{.Library}}
              plugin_name: key-auth
              plugin_config:
                "@type": type.googleapis.com/xds.type.v3.TypedStruct
                value:
                  sources: ["header:x-api-key"]
                  consumers:
                  - {name: alice, group: admins, keys: ["alice-secret-key"]}
                  - {name: bob, group: users, keys: ["bob-secret-key-1"]}
          - name: moe.consumer-restriction
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
              library_id: moe
              library_path: {{.Library}}
              plugin_name: consumer-restriction
              plugin_config:
                "@type": type.googleapis.com/xds.type.v3.TypedStruct
                value:
                  rules:
                  - {consumers: ["*"], methods: [GET]}
                  - {groups: [admins]}
          - name: moe.limit-req
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
              library_id: moe
              library_path: {{.Library}}
              plugin_name: limit-req
              plugin_config:
                "@type": type.googleapis.com/xds.type.v3.TypedStruct
                value: {rate: 0.001, burst: 3, key: "$consumer", empty_key: reject}
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          route_config:
            name: separate
            virtual_hosts:
            - name: separate
              domains: ["*"]
              routes:
              - match: {prefix: /}
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

func TestConsumerCrossesSeparateGolangFilters(t *testing.T) {
	h := hosttest.Start(t, separateFilters, hosttest.Vars{"UpstreamPort": hosttest.EchoUpstream(t)})
	cases := []struct {
		name, method, key string
		want              int
	}{
		{"no key: key-auth refuses", "GET", "", 401},
		{"user may read", "GET", "bob-secret-key-1", 200},
		{"user may not write (consumer-restriction saw bob)", "POST", "bob-secret-key-1", 403},
		{"admin may write (consumer-restriction saw alice's group)", "POST", "alice-secret-key", 200},
		{"alice's second request", "GET", "alice-secret-key", 200},
		{"alice's third request", "GET", "alice-secret-key", 200},
		{"alice over her own limit (limit-req keyed on $consumer)", "GET", "alice-secret-key", 429},
		{"bob still has his own budget", "GET", "bob-secret-key-1", 200},
	}
	for _, c := range cases {
		var hdr []string
		if c.key != "" {
			hdr = []string{"x-api-key", c.key}
		}
		resp, body := hosttest.Send(t, c.method, h.URL+"/things", "", hdr...)
		if resp.StatusCode != c.want {
			t.Fatalf("%s: %s got %d, want %d (%s)", c.name, c.method, resp.StatusCode, c.want, body)
		}
		if resp.StatusCode == http.StatusOK {
			if e := hosttest.DecodeEcho(t, resp); e.Header("x-consumer-name") == "" {
				t.Errorf("%s: upstream saw no x-consumer-name", c.name)
			}
		}
	}
}
