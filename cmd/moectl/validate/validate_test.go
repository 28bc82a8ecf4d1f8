package validate

import (
	"strings"
	"testing"
)

func check(t *testing.T, src string, opts Options) *FileResult {
	t.Helper()
	return Bytes("in.yaml", []byte(src), opts).Files[0]
}

func findings(fr *FileResult) string {
	var b strings.Builder
	for _, f := range fr.Findings {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

func wantFindings(t *testing.T, fr *FileResult, want ...string) {
	t.Helper()
	got := findings(fr)
	if len(fr.Findings) != len(want) {
		t.Errorf("%d findings, want %d:\n%s", len(fr.Findings), len(want), got)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("no finding %q in:\n%s", w, got)
		}
	}
}

const listenerRDS = `resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: l
  address: {socket_address: {address: 0.0.0.0, port_value: 80}}
  filter_chains:
  - filters:
    - name: envoy.filters.network.http_connection_manager
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: l
        rds: {route_config_name: r, config_source: {ads: {}, resource_api_version: V3}}
        http_filters:
        - name: envoy.filters.http.router
          typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
        - name: envoy.filters.http.golang
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
            library_id: moe
            library_path: /etc/moe/libgolang.so
            plugin_name: moe
            plugin_config:
              "@type": type.googleapis.com/xds.type.v3.TypedStruct
              value: {plugins: [{name: limit-req, config: {rate: 0}}]}
- "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
  name: r
  virtual_hosts:
  - name: v
    domains: ["*"]
    routes:
    - match: {prefix: /}
      route: {cluster: not-checked-for-rds}
      typed_per_filter_config:
        envoy.filters.http.golang:
          "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute
          plugins_config:
            moe:
              config:
                "@type": type.googleapis.com/xds.type.v3.TypedStruct
                value: {plugins: [{name: key-auth, config: {realm: "a\"b"}}]}
`

func TestXDSResources(t *testing.T) {
	fr := check(t, listenerRDS, Options{})
	if strings.Join(fr.Checked, ",") != "Listener l,RouteConfiguration r" || fr.PluginConfigs != 2 {
		t.Fatalf("checked %v, %d plugin configs", fr.Checked, fr.PluginConfigs)
	}
	wantFindings(t, fr,
		`in.yaml:13:11: error: resources[0].filter_chains[0].filters[0].typed_config.http_filters[0]: the router (envoy.filters.http.router) must be the last HTTP filter`,
		`in.yaml:15:11: error: resources[0].filter_chains[0].filters[0].typed_config.http_filters[1]: the last HTTP filter must be the router`,
		`in.yaml:23:60: error: resources[0].filter_chains[0].filters[0].typed_config.http_filters[1].typed_config.plugin_config.value.plugins[0].config.rate: invalid config of plugin "limit-req": field rate`,
		`in.yaml:39:61: error: resources[1].virtual_hosts[0].routes[0].typed_per_filter_config["envoy.filters.http.golang"].plugins_config["moe"].config.value.plugins[0].config.realm: invalid config of plugin "key-auth": field realm`,
	)
}

func TestOneResourceAndTypeMismatch(t *testing.T) {
	fr := check(t, `"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
name: c
connect_timeout: -1s
`, Options{})
	wantFindings(t, fr, `in.yaml:3:1: error: connect_timeout: value must be greater than 0s`)
	fr = check(t, `type_url: type.googleapis.com/envoy.config.cluster.v3.Cluster
resources:
- {"@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration, name: r}
`, Options{})
	wantFindings(t, fr, `in.yaml:3:4: error: resources[0].@type: type type.googleapis.com/envoy.config.route.v3.RouteConfiguration in a response of type_url`)
}

// JSON-named fields (what istiod and protojson print) are located too.
func TestCamelCaseYAMLIsLocated(t *testing.T) {
	fr := check(t, `{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "c",
 "connectTimeout": "-1s"}`, Options{})
	wantFindings(t, fr, `in.yaml:2:2: error: connect_timeout: value must be greater than 0s`)
}

func TestTypedStructIsCheckedAsItsType(t *testing.T) {
	fr := check(t, `"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: l
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
filter_chains:
- filters:
  - name: hcm
    typed_config:
      "@type": type.googleapis.com/udpa.type.v1.TypedStruct
      type_url: type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
      value:
        stat_prefix: x
        nope: 1
        http_filters: [{name: r, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]
`, Options{})
	wantFindings(t, fr, `in.yaml:12:9: error: filter_chains[0].filters[0].typed_config.value.nope: unknown field "nope" in envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager`)
}

// A type Envoy has but moectl cannot link is accepted with a warning.
func TestUnlinkedTypeIsAWarning(t *testing.T) {
	fr := check(t, `"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: l
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
access_log:
- name: otel
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.access_loggers.open_telemetry.v3.OpenTelemetryAccessLogConfig
    anything: goes
`, Options{})
	if fr.Errors() != 0 || len(fr.Findings) != 1 || !strings.Contains(fr.Findings[0].Message, "not linked into moectl") || fr.Findings[0].Line != 6 {
		t.Fatalf("%s", findings(fr))
	}
}

func TestUnknownTypeAndWrongFilterKind(t *testing.T) {
	fr := check(t, `"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: l
address: {socket_address: {address: 0.0.0.0, port_value: 80}}
filter_chains:
- filters:
  - name: cors
    typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors}
`, Options{})
	wantFindings(t, fr, `in.yaml:7:5: error: filter_chains[0].filters[0].typed_config: envoy.extensions.filters.http.cors.v3.Cors is an HTTP filter, not a network filter`)
	fr = check(t, `"@type": type.googleapis.com/envoy.config.listener.v3.Listener
name: l
filter_chains:
- filters:
  - name: x
    typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.corz.v3.Cors}
`, Options{})
	wantFindings(t, fr, `in.yaml:6:20: error: filter_chains[0].filters[0].typed_config.@type: unknown type type.googleapis.com/envoy.extensions.filters.http.corz.v3.Cors: not an Envoy v1.39 (contrib) config type`)
}

func TestEmptyAndBrokenFiles(t *testing.T) {
	wantFindings(t, check(t, "# nothing\n", Options{}), "in.yaml: error: the file is empty")
	wantFindings(t, check(t, "a: [\n", Options{}), "in.yaml:1:0: error: parse YAML: did not find expected node content")
	wantFindings(t, check(t, "- a\n", Options{}), "in.yaml:1:1: error: a document must be a mapping")
	wantFindings(t, check(t, "admin: {}\n---\nadmin: {}\n", Options{}), "in.yaml:3:1: error: document 2: a second Envoy bootstrap in one file")
}
