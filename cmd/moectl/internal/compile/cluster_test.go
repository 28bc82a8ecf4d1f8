package compile

import (
	"testing"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
)

const strictDNSCluster = `  - name: dns
    type: STRICT_DNS
    connect_timeout: 2s
    dns_refresh_rate: 30s
    dns_lookup_family: V4_ONLY
    per_connection_buffer_limit_bytes: 4096
    load_assignment:
      cluster_name: dns
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: localhost, port_value: 8080}}}
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 8081}}}`

func TestStrictDNSClusterCompiles(t *testing.T) {
	res, err := compileString(t, minimal(t, map[string]string{"TOP": strictDNSCluster}))
	if err != nil {
		t.Fatal(err)
	}
	want := bootstrap.Cluster{
		Name: "dns", Type: "STRICT_DNS", ConnectTimeoutMS: 2000, DNSRefreshRateMS: 30000,
		PerConnectionBufferLimitBytes: 4096,
		Endpoints:                     []bootstrap.SocketAddress{{Address: "localhost", Port: 8080}, {Address: "127.0.0.1", Port: 8081}},
	}
	if got := res.Bootstrap.Clusters[1]; !jsonEqual(t, got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestClusterDefaultsAreEnvoys(t *testing.T) {
	res, err := compileString(t, replaceOnce(t, minimal(t, nil), "    connect_timeout: 1s\n", ""))
	if err != nil {
		t.Fatal(err)
	}
	got := res.Bootstrap.Clusters[0]
	if got.Type != "STATIC" || got.ConnectTimeoutMS != 5000 || got.DNSRefreshRateMS != 5000 || got.PerConnectionBufferLimitBytes != 1<<20 {
		t.Fatalf("defaults: %+v", got)
	}
}

func TestClusterProblemsAreRefused(t *testing.T) {
	cases := []struct {
		name, snippet, want string
	}{
		{"duplicate name", "  - {name: backend}", `static_resources.clusters[1].name: cluster name "backend" is already used`},
		{"EDS", "  - {name: e, type: EDS, eds_cluster_config: {service_name: x}}", "static_resources.clusters[1].type: EDS is not supported by moe-host (STATIC and STRICT_DNS only)"},
		{"endpoint weight", "  - name: w\n    load_assignment: {cluster_name: w, endpoints: [{lb_endpoints: [{load_balancing_weight: 3, endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}",
			"static_resources.clusters[1].load_assignment.endpoints[0].lb_endpoints[0].load_balancing_weight: not supported by moe-host"},
		{"udp endpoint", "  - name: u\n    load_assignment: {cluster_name: u, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {protocol: UDP, address: 127.0.0.1, port_value: 1}}}}]}]}",
			"static_resources.clusters[1].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.protocol: not supported by moe-host"},
		{"http2 upstream", "  - name: h2\n    typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {\"@type\": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions}}",
			`static_resources.clusters[1].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].@type: type type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions is not supported by moe-host (unknown to moectl)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileString(t, minimal(t, map[string]string{"TOP": c.snippet}))
			wantError(t, err, c.want)
		})
	}
}
