package compile

import "testing"

func TestUnsupportedFieldsAreRefusedWithTheirYAMLPath(t *testing.T) {
	cases := []struct {
		name     string
		snippets map[string]string
		want     string
	}{
		{"retry host predicate", map[string]string{"ACTION": "retry_policy: {num_retries: 2, retry_host_predicate: [{name: envoy.retry_host_predicates.previous_hosts}]}"},
			routePath + ".route.retry_policy.retry_host_predicate: not supported by moe-host"},
		{"retriable headers", map[string]string{"ACTION": "retry_policy: {retry_on: retriable-headers}"},
			routePath + `.route.retry_policy.retry_on: retry_on "retriable-headers" is not supported by moe-host`},
		{"route hedge policy", map[string]string{"ACTION": "hedge_policy: {hedge_on_per_try_timeout: true}"},
			routePath + ".route.hedge_policy: not supported by moe-host"},
		{"header raw_value", map[string]string{"ROUTE": "request_headers_to_add: [{header: {key: a, raw_value: Yg==}}]"},
			routePath + ".request_headers_to_add[0].header.raw_value: not supported by moe-host"},
		{"match query_parameters", map[string]string{"MATCH": "query_parameters: [{name: q, present_match: true}]"},
			routePath + ".match.query_parameters: not supported by moe-host"},
		{"virtual host require_tls", map[string]string{"VHOST": "require_tls: ALL"},
			vhPath + ".require_tls: not supported by moe-host"},
		{"route config internal only headers", map[string]string{"ROUTE_CONFIG": "internal_only_headers: [x-internal]"},
			rcPath + ".internal_only_headers: not supported by moe-host"},
		{"hcm use_remote_address even when false", map[string]string{"HCM": "use_remote_address: false"},
			hcmPath + ".use_remote_address: not supported by moe-host"},
		{"hcm HTTP/2 codec", map[string]string{"HCM": "codec_type: HTTP2"},
			hcmPath + ".codec_type: HTTP2 is not supported by moe-host (HTTP/1.1 only; AUTO or HTTP1)"},
		{"listener freebind", map[string]string{"LISTENER": "freebind: true"},
			"static_resources.listeners[0].freebind: not supported by moe-host"},
		{"listener pipe address", map[string]string{"LISTENER": "stat_prefix: l"},
			"static_resources.listeners[0].stat_prefix: not supported by moe-host"},
		{"cluster least request", map[string]string{"CLUSTER": "lb_policy: LEAST_REQUEST"},
			"static_resources.clusters[0].lb_policy: not supported by moe-host"},
		{"cluster logical dns", map[string]string{"CLUSTER": "type: LOGICAL_DNS"},
			"static_resources.clusters[0].type: LOGICAL_DNS is not supported by moe-host (STATIC and STRICT_DNS only)"},
		{"cluster circuit breakers", map[string]string{"CLUSTER": "circuit_breakers: {thresholds: [{max_connections: 1}]}"},
			"static_resources.clusters[0].circuit_breakers: not supported by moe-host"},
		{"bootstrap stats flush", map[string]string{"TOP": "stats_flush_interval: 5s"},
			"stats_flush_interval: not supported by moe-host"},
		{"router option", map[string]string{"FILTERS": "- name: r0\n  typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, suppress_envoy_headers: true}"},
			hcmPath + ".http_filters[1].typed_config.suppress_envoy_headers: not supported by moe-host"},
		{"http filter of another type", map[string]string{"FILTERS": "- name: wrapped\n  typed_config: {\"@type\": type.googleapis.com/xds.type.v3.TypedStruct, type_url: x}"},
			hcmPath + `.http_filters[1].typed_config: http filter "wrapped" of type type.googleapis.com/xds.type.v3.TypedStruct is not supported by moe-host (golang and router only)`},
		{"unknown filter type", map[string]string{"FILTERS": "- name: cors\n  typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors}"},
			hcmPath + ".http_filters[1].typed_config.@type: type type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors is not supported by moe-host (unknown to moectl)"},
		{"string matcher custom", map[string]string{"MATCH": "headers: [{name: x, string_match: {custom: {name: c, typed_config: {\"@type\": type.googleapis.com/google.protobuf.Empty}}}}]"},
			routePath + ".match.headers[0].string_match.custom: not supported by moe-host"},
		{"google_re2 option", map[string]string{"MATCH": "headers: [{name: x, safe_regex_match: {google_re2: {max_program_size: 10}, regex: a}}]"},
			routePath + ".match.headers[0].safe_regex_match.google_re2.max_program_size: not supported by moe-host"},
		{"direct response body from file", map[string]string{"ROUTES": "- {match: {path: /x}, direct_response: {status: 200, body: {filename: /etc/hostname}}}"},
			vhPath + ".routes[1].direct_response.body.filename: not supported by moe-host"},
		{"weighted cluster per-cluster header", map[string]string{"ROUTES": "- {match: {path: /x}, route: {weighted_clusters: {clusters: [{name: backend, weight: 1, request_headers_to_add: [{header: {key: a, value: b}}]}]}}}"},
			vhPath + ".routes[1].route.weighted_clusters.clusters[0].request_headers_to_add: not supported by moe-host"},
		{"golang secret from sds", map[string]string{"GOLANG": "generic_secrets: [{name: s, sds_config: {ads: {}}}]"},
			golangPath + ".generic_secrets[0].sds_config: not supported by moe-host"},
		{"tls secret", map[string]string{"SECRETS": "secrets: [{name: cert, tls_certificate: {certificate_chain: {inline_string: x}}}]"},
			"static_resources.secrets[0].tls_certificate: not supported by moe-host"},
		{"static cluster with a host name", map[string]string{"TOP": "  - name: other\n    load_assignment: {cluster_name: other, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: example.com, port_value: 80}}}}]}]}"},
			"static_resources.clusters[1].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address: \"example.com\" is not an IP address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileString(t, minimal(t, c.snippets))
			wantError(t, err, c.want)
		})
	}
}

func TestUnknownFieldsAreRefusedWithTheirYAMLPath(t *testing.T) {
	cases := []struct {
		name     string
		snippets map[string]string
		want     string
	}{
		{"top level", map[string]string{"TOP": "bogus: 1"},
			`bogus: unknown field "bogus" in envoy.config.bootstrap.v3.Bootstrap`},
		{"listener", map[string]string{"LISTENER": "adress: {}"},
			`static_resources.listeners[0].adress: unknown field "adress" in envoy.config.listener.v3.Listener`},
		{"inside an Any", map[string]string{"HCM": "stat_prefx: x"},
			hcmPath + `.stat_prefx: unknown field "stat_prefx" in envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager`},
		{"golang filter config", map[string]string{"GOLANG": "plugin: moe"},
			golangPath + `.plugin: unknown field "plugin" in envoy.extensions.filters.http.golang.v3alpha.Config`},
		{"route action", map[string]string{"ACTION": "timeout_ms: 5"},
			routePath + `.route.timeout_ms: unknown field "timeout_ms" in envoy.config.route.v3.RouteAction`},
		{"per-filter config map value", map[string]string{"ROUTE": "typed_per_filter_config:\n  envoy.filters.http.golang:\n    \"@type\": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute\n    plugin_config: {}"},
			routePath + `.typed_per_filter_config["envoy.filters.http.golang"].plugin_config: unknown field "plugin_config" in envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileString(t, minimal(t, c.snippets))
			wantError(t, err, c.want)
		})
	}
}

func TestDuplicateYAMLKeysAreRefused(t *testing.T) {
	_, err := compileString(t, minimal(t, map[string]string{"VHOST": "routes: []"}))
	if err == nil {
		t.Fatal("a second routes key in one virtual host was accepted")
	}
}

func TestEnvoyValidationRulesAreReportedWithYAMLPaths(t *testing.T) {
	y := minimal(t, map[string]string{
		"HCM":     "max_request_headers_kb: 0",
		"CLUSTER": "dns_refresh_rate: 0s",
	})
	_, err := compileString(t, y)
	wantError(t, err, hcmPath+".max_request_headers_kb: value must be inside range (0, 8192]")
	wantError(t, err, "static_resources.clusters[0].dns_refresh_rate: value must be greater than 1ms")
}

func TestAllProblemsAreReportedNotJustTheFirst(t *testing.T) {
	y := minimal(t, map[string]string{
		"ACTION":  "hedge_policy: {}",
		"CLUSTER": "lb_policy: RANDOM",
		"HCM":     "codec_type: HTTP3",
	})
	_, err := compileString(t, y)
	if n := len(errorLines(err)); n != 3 {
		t.Fatalf("want 3 problems, got %d:\n%v", n, err)
	}
}

func TestAccessLogFlushIntervalIsCompiled(t *testing.T) {
	res, err := compileString(t, minimal(t, map[string]string{"HCM": "access_log_options: {access_log_flush_interval: 1.5s}"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Bootstrap.Listeners[0].HCM.AccessLogFlushIntervalMS; got != 1500 {
		t.Fatalf("access_log_flush_interval_ms = %d, want 1500", got)
	}
}

func TestFlushAccessLogOnNewRequest(t *testing.T) {
	cases := []struct {
		name    string
		snippet string
		want    bool
		wantErr string
	}{
		{"unset", "", false, ""},
		{"access_log_options", "access_log_options: {flush_access_log_on_new_request: true}", true, ""},
		{"deprecated top-level field", "flush_access_log_on_new_request: true", true, ""},
		{"both", "flush_access_log_on_new_request: true\naccess_log_options: {flush_access_log_on_new_request: true}", false,
			hcmPath + ".flush_access_log_on_new_request: set it in access_log_options only (Envoy ignores this deprecated field when access_log_options is present)"},
		{"tunnel flush", "access_log_options: {flush_log_on_tunnel_successfully_established: true}", false,
			hcmPath + ".access_log_options.flush_log_on_tunnel_successfully_established: not supported by moe-host"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := compileString(t, minimal(t, map[string]string{"HCM": c.snippet}))
			if c.wantErr != "" {
				wantError(t, err, c.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Bootstrap.Listeners[0].HCM.FlushAccessLogOnNewRequest; got != c.want {
				t.Fatalf("flush_access_log_on_new_request = %v, want %v", got, c.want)
			}
		})
	}
}
