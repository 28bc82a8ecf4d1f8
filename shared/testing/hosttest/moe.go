package hosttest

import (
	"encoding/json"
	"fmt"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// Plugin is one entry of the moe filter's plugin chain.
type Plugin struct {
	Name     string `json:"name"`
	Config   any    `json:"config,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
}

// Chain describes a moe bootstrap for StartChain: the filter-level plugin chain and,
// optionally, a per-route chain for the route matching prefix /special (route name
// "special"); every other path goes to route "default". Both routes go to the echo upstream.
type Chain struct {
	Plugins      []Plugin
	RoutePlugins []Plugin // nil: no per-route config
	// Consumers are the chain-level consumers (the moe config's consumers:
	// list), e.g. map[string]any{"name": "alice", "auth": map[string]any{"key-auth": ...}}.
	Consumers []any
}

// moeBootstrap is an envoy.yaml with one moe golang filter and the router, valid for Envoy too.
const moeBootstrap = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: {{.AdminPort}}}}
static_resources:
  listeners:
  - name: e2e
    address: {socket_address: {address: 127.0.0.1, port_value: {{.Port}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: e2e
          http_filters:
          - name: envoy.filters.http.golang
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
              library_id: moe
              library_path: {{.Library}}
              plugin_name: moe
              plugin_config:
                "@type": type.googleapis.com/xds.type.v3.TypedStruct
                value: {plugins: {{.PluginsJSON}}{{if .ConsumersJSON}}, consumers: {{.ConsumersJSON}}{{end}}}
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          route_config:
            name: e2e
            virtual_hosts:
            - name: e2e
              domains: ["*"]
              routes:
              - name: special
                match: {prefix: /special}
                route: {cluster: upstream}
{{- if .RoutePluginsJSON}}
                typed_per_filter_config:
                  envoy.filters.http.golang:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute
                    plugins_config:
                      moe:
                        config:
                          "@type": type.googleapis.com/xds.type.v3.TypedStruct
                          value: {plugins: {{.RoutePluginsJSON}}}
{{- end}}
              - name: default
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

// StartChain starts an echo upstream and moe-host running out/libgolang.so with the given
// plugin chain. Use it from every plugin's end-to-end test.
func StartChain(t tb.TB, c Chain) *Host {
	t.Helper()
	return Start(t, moeBootstrap, chainVars(t, c, EchoUpstream(t)))
}

// StartChainExpectFailure checks that moe-host refuses the chain at start (for example an
// invalid plugin config) and returns its output, which should name plugin, field and reason.
func StartChainExpectFailure(t tb.TB, c Chain) string {
	t.Helper()
	return StartExpectFailure(t, moeBootstrap, chainVars(t, c, 9))
}

func chainVars(t tb.TB, c Chain, upstreamPort int) Vars {
	t.Helper()
	if c.Plugins == nil {
		c.Plugins = []Plugin{}
	}
	plugins, err := json.Marshal(c.Plugins)
	if err != nil {
		t.Fatalf("plugins: %v", err)
	}
	vars := Vars{"PluginsJSON": string(plugins), "RoutePluginsJSON": "", "ConsumersJSON": "", "UpstreamPort": upstreamPort}
	if c.Consumers != nil {
		cs, err := json.Marshal(c.Consumers)
		if err != nil {
			t.Fatalf("consumers: %v", err)
		}
		vars["ConsumersJSON"] = string(cs)
	}
	if c.RoutePlugins != nil {
		rp, err := json.Marshal(c.RoutePlugins)
		if err != nil {
			t.Fatalf("route plugins: %v", err)
		}
		vars["RoutePluginsJSON"] = string(rp)
	}
	return vars
}

// String makes a Plugin readable in test names.
func (p Plugin) String() string { return fmt.Sprintf("%s%v", p.Name, p.Config) }
