package load

import (
	"strings"
	"testing"
)

func TestGoFieldNamesMapToProtoNames(t *testing.T) {
	cases := map[string]string{
		"StaticResources":      "static_resources",
		"MaxRequestHeadersKb":  "max_request_headers_kb",
		"Http2ProtocolOptions": "http2_protocol_options",
		"Ipv4Compat":           "ipv4_compat",
		"Name":                 "name",
	}
	for in, want := range cases {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"empty document", "", "bootstrap is empty"},
		{"not yaml", "a: [", "parse yaml"},
		{"duplicate key", "admin: {}\nadmin: {}", `key "admin" already set`},
		{"unknown field", "admin: {adress: {}}", `admin.adress: unknown field "adress" in envoy.config.bootstrap.v3.Admin`},
		{"unknown Any type", `static_resources: {listeners: [{filter_chains: [{filters: [{name: x, typed_config: {"@type": type.googleapis.com/x.Y}}]}]}]}`,
			"static_resources.listeners[0].filter_chains[0].filters[0].typed_config.@type: type type.googleapis.com/x.Y is not supported by moe-host (unknown to moectl)"},
		{"Any without type", `static_resources: {listeners: [{filter_chains: [{filters: [{name: x, typed_config: {a: 1}}]}]}]}`,
			`static_resources.listeners[0].filter_chains[0].filters[0].typed_config: "@type" is missing`},
		{"wrong scalar type", "admin: {address: {socket_address: {port_value: abc}}}", `admin.address.socket_address.port_value: want a non-negative integer (uint32), got "abc"`},
		{"string for a bool", "static_resources: {clusters: [{name: c, respect_dns_ttl: \"yes\"}]}", `static_resources.clusters[0].respect_dns_ttl: want true or false, got the string "yes"`},
		{"bad enum", "static_resources: {clusters: [{name: c, type: STATICC}]}", `static_resources.clusters[0].type: unknown value "STATICC" of envoy.config.cluster.v3.Cluster.DiscoveryType`},
		{"bad duration", "static_resources: {clusters: [{name: c, connect_timeout: 1m}]}", `static_resources.clusters[0].connect_timeout: want a duration such as "1.5s"`},
		{"two oneof members", "static_resources: {clusters: [{name: c, type: STATIC, cluster_type: {name: x}}]}", `only one of the oneof cluster_discovery_type may be set`},
		{"field twice", "admin: {address: {socket_address: {port_value: 1, portValue: 2}}}", `field port_value is also set as`},
		{"validation rule", "admin: {address: {socket_address: {address: 127.0.0.1, port_value: 70000}}}",
			"admin.address.socket_address.port_value: value must be less than or equal to 65535"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Bytes([]byte(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestJSONBootstrapIsAccepted(t *testing.T) {
	bs, err := Bytes([]byte(`{"admin": {"address": {"socket_address": {"address": "127.0.0.1", "portValue": 9901}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if bs.GetAdmin().GetAddress().GetSocketAddress().GetPortValue() != 9901 {
		t.Fatalf("decoded %v", bs)
	}
}
