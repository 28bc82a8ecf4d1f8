package compile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"os"
	"testing"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
)

var update = flag.Bool("update", false, "rewrite testdata/envoy.compiled.json")

func compileRealistic(t *testing.T) *bootstrap.Bootstrap {
	t.Helper()
	res, err := compileString(t, readTestdata(t, "envoy.yaml"))
	if err != nil {
		t.Fatalf("compile testdata/envoy.yaml: %v", err)
	}
	return res.Bootstrap
}

// The golden file doubles as a worked example of the schema for the moe-host side.
func TestRealisticBootstrapMatchesGoldenJSON(t *testing.T) {
	got, err := json.MarshalIndent(compileRealistic(t), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const golden = "testdata/envoy.compiled.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("compiled JSON differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
}

func TestRealisticBootstrapRoundTripsThroughJSON(t *testing.T) {
	js, err := json.Marshal(compileRealistic(t))
	if err != nil {
		t.Fatal(err)
	}
	var bs bootstrap.Bootstrap
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&bs); err != nil {
		t.Fatalf("decode compiled JSON: %v", err)
	}
	hcm := bs.Listeners[0].HCM
	rc := hcm.RouteConfig
	api, def := rc.VirtualHosts[0], rc.VirtualHosts[1]
	checks := []struct {
		name      string
		got, want any
	}{
		{"admin", *bs.Admin, bootstrap.SocketAddress{Address: "127.0.0.1", Port: 9901}},
		{"listener address", bs.Listeners[0].Address, bootstrap.SocketAddress{Address: "127.0.0.1", Port: 10000}},
		{"listener buffer limit", bs.Listeners[0].PerConnectionBufferLimitBytes, uint32(32768)},
		{"stat prefix", hcm.StatPrefix, "ingress_http"},
		{"max request headers", hcm.MaxRequestHeadersKB, uint32(96)},
		{"request timeout", hcm.RequestTimeoutMS, uint64(30000)},
		{"stream idle timeout", hcm.StreamIdleTimeoutMS, uint64(60000)},
		{"filter order", []string{hcm.HTTPFilters[0].Type, hcm.HTTPFilters[1].Type}, []string{"golang", "router"}},
		{"library id", hcm.HTTPFilters[0].Golang.LibraryID, "moe"},
		{"library path kept as written", hcm.HTTPFilters[0].Golang.LibraryPath, fakeLibrary},
		{"plugin name", hcm.HTTPFilters[0].Golang.PluginName, "moe"},
		{"string secret", hcm.HTTPFilters[0].Golang.Secrets["hmac-key"], base64.StdEncoding.EncodeToString([]byte("s3cr3t"))},
		{"bytes secret", hcm.HTTPFilters[0].Golang.Secrets["raw-key"], base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff})},
		{"domains", api.Domains, []string{"api.example.com", "api.example.com:10000"}},
		{"regex route", api.Routes[0].Match, bootstrap.RouteMatch{Kind: "safe_regex", Value: `/v2/[a-z]+/\d+`, CaseSensitive: true, Headers: []bootstrap.HeaderMatcher{}}},
		{"weighted clusters", api.Routes[0].Route.WeightedClusters, []bootstrap.WeightedCluster{{Name: "backend", Weight: 90}, {Name: "dns-backend", Weight: 10}}},
		{"default route timeout", api.Routes[0].Route.TimeoutMS, uint64(15000)},
		{"case insensitive prefix", api.Routes[1].Match.CaseSensitive, false},
		{"prefix rewrite", *api.Routes[1].Route.PrefixRewrite, "/"},
		{"host rewrite", *api.Routes[1].Route.HostRewriteLiteral, "backend.internal"},
		{"route timeout", api.Routes[1].Route.TimeoutMS, uint64(2500)},
		{"no rewrite when unset", api.Routes[0].Route.PrefixRewrite == nil && api.Routes[0].Route.HostRewriteLiteral == nil, true},
		{"direct response", *def.Routes[0].DirectResponse, bootstrap.DirectResponse{Status: 200, Body: "ok\n"}},
		{"direct response has no route", def.Routes[0].Route == nil, true},
		{"cluster header", def.Routes[1].Route.ClusterHeader, "x-target-cluster"},
		{"disabled timeout", def.Routes[1].Route.TimeoutMS, uint64(0)},
		{"cluster not found response code", def.Routes[1].Route.ClusterNotFoundResponseCode, uint32(404)},
		{"cluster not found response code default", api.Routes[0].Route.ClusterNotFoundResponseCode, uint32(503)},
		{"static cluster", bs.Clusters[0], bootstrap.Cluster{Name: "backend", Type: "STATIC", ConnectTimeoutMS: 250, DNSRefreshRateMS: 5000,
			PerConnectionBufferLimitBytes: 65536, Endpoints: []bootstrap.SocketAddress{{Address: "127.0.0.1", Port: 8080}, {Address: "127.0.0.1", Port: 8081}}}},
		{"strict dns cluster", bs.Clusters[1], bootstrap.Cluster{Name: "dns-backend", Type: "STRICT_DNS", ConnectTimeoutMS: 5000, DNSRefreshRateMS: 10000,
			PerConnectionBufferLimitBytes: 1024 * 1024, Endpoints: []bootstrap.SocketAddress{{Address: "localhost", Port: 8080}}}},
	}
	for _, c := range checks {
		if !jsonEqual(t, c.got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, c.got, c.want)
		}
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

// typedStructAny builds, independently of the compiler, the Any Envoy would hand to Go for
// plugin_config {"@type": TypedStruct, value: v}.
func typedStructAny(t *testing.T, v map[string]any) *anypb.Any {
	t.Helper()
	s, err := structpb.NewStruct(v)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := proto.MarshalOptions{Deterministic: true}.Marshal(&xdstypev3.TypedStruct{Value: s})
	if err != nil {
		t.Fatal(err)
	}
	return &anypb.Any{TypeUrl: "type.googleapis.com/xds.type.v3.TypedStruct", Value: inner}
}

func TestPluginConfigIsBase64OfTheSerializedAny(t *testing.T) {
	bs := compileRealistic(t)
	plugin := func(level string) map[string]any {
		cfg := map[string]any{}
		if level != "" {
			cfg["level"] = level
		}
		return map[string]any{"plugins": []any{map[string]any{"name": "x", "config": cfg}}}
	}
	rc := bs.Listeners[0].HCM.RouteConfig
	cases := []struct {
		name string
		got  string
		want map[string]any
	}{
		{"filter plugin_config", bs.Listeners[0].HCM.HTTPFilters[0].Golang.PluginConfig, plugin("")},
		{"route_configuration per-filter config", *rc.PerFilterConfig["envoy.filters.http.golang"]["moe"].Config, plugin("rc")},
		{"virtual_host per-filter config", *rc.VirtualHosts[0].PerFilterConfig["envoy.filters.http.golang"]["moe"].Config, plugin("vh")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := base64.StdEncoding.DecodeString(c.got)
			if err != nil {
				t.Fatalf("not base64: %v", err)
			}
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(typedStructAny(t, c.want))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("bytes differ:\n got %x\nwant %x", got, want)
			}
		})
	}
}

func TestPerRouteConfigAtAllThreeLevels(t *testing.T) {
	rc := compileRealistic(t).Listeners[0].HCM.RouteConfig
	const f = "envoy.filters.http.golang"
	cases := []struct {
		name         string
		pfc          bootstrap.PerFilterConfig
		wantDisabled bool
		wantConfig   bool
	}{
		{"route_configuration", rc.PerFilterConfig, false, true},
		{"virtual_host", rc.VirtualHosts[0].PerFilterConfig, false, true},
		{"route disables the plugin", rc.VirtualHosts[0].Routes[1].PerFilterConfig, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, ok := c.pfc[f]["moe"]
			if !ok {
				t.Fatalf("no per-filter config for %s/moe in %+v", f, c.pfc)
			}
			if e.Disabled != c.wantDisabled || (e.Config != nil) != c.wantConfig {
				t.Fatalf("got disabled=%v config=%v", e.Disabled, e.Config != nil)
			}
		})
	}
	if n := len(rc.VirtualHosts[1].PerFilterConfig); n != 0 {
		t.Fatalf("virtual host without typed_per_filter_config has %d entries", n)
	}
}
