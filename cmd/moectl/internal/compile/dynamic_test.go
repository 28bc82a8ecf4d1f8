package compile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/load"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDynamicResourcesNeedNodeAndExistingPaths(t *testing.T) {
	dir := t.TempDir()
	lds := write(t, dir, "lds.yaml", "resources: []\n")
	boot := "dynamic_resources:\n  lds_config:\n    path_config_source: {path: " + lds + "}\n  cds_config:\n    path_config_source: {path: " + dir + "/missing.yaml, watched_directory: {path: " + dir + "}}\n"
	_, err := Bytes([]byte(boot), testOptions)
	if err == nil || !strings.Contains(err.Error(), "node 'id' and 'cluster' are required") ||
		!strings.Contains(err.Error(), "missing.yaml' does not exist") {
		t.Fatalf("want the node and path errors, got %v", err)
	}
	res, err := Bytes([]byte("node: {id: a, cluster: b}\n"+strings.Replace(boot, dir+"/missing.yaml", lds, 1)), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	dr := res.Bootstrap.DynamicResources
	if dr == nil || dr.LDS == nil || dr.LDS.Path != lds || dr.CDS == nil || dr.CDS.WatchedDirectory != dir {
		t.Fatalf("dynamic resources: %+v", dr)
	}
}

func TestResourcesFile(t *testing.T) {
	dir := t.TempDir()
	bs := &bootstrapv3.Bootstrap{}
	rdsFile := write(t, dir, "rds.yaml", `version_info: "7"
resources:
- "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
  name: r
  virtual_hosts:
  - name: all
    domains: ["*"]
    routes:
    - match: {prefix: /}
      route: {cluster: not-checked-for-rds}
      typed_per_filter_config:
        any.filter.name:
          "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute
          plugins_config:
            moe: {config: {"@type": type.googleapis.com/xds.type.v3.TypedStruct, value: {plugins: []}}}
`)
	res, err := ResourcesFile(bs, KindRDS, rdsFile, Options{SkipPluginCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.VersionInfo != "7" || len(res.RouteConfigs) != 1 || res.RouteConfigs[0].Hash == "" ||
		res.RouteConfigs[0].VirtualHosts[0].Routes[0].PerFilterConfig["any.filter.name"]["moe"].Config == nil {
		t.Fatalf("compiled: %+v", res)
	}
	again, _ := ResourcesFile(bs, KindRDS, rdsFile, Options{SkipPluginCheck: true})
	if again.RouteConfigs[0].Hash != res.RouteConfigs[0].Hash {
		t.Errorf("hash differs between two compilations of one file")
	}
	// The same file read as LDS: wrong resource type (rejected, not unreadable).
	_, err = ResourcesFile(bs, KindLDS, rdsFile, Options{SkipPluginCheck: true})
	if err == nil || errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "a LDS file holds type.googleapis.com/envoy.config.listener.v3.Listener") {
		t.Errorf("LDS of a route file: %v", err)
	}
	// JSON by extension, unknown fields refused, broken YAML unreadable.
	js := write(t, dir, "cds.json", `{"version_info": "1", "resources": [{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "c", "type": "STATIC", "load_assignment": {"cluster_name": "c", "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 1}}}}]}]}}]}`)
	if res, err := ResourcesFile(bs, KindCDS, js, Options{}); err != nil || len(res.Clusters) != 1 {
		t.Errorf("json CDS: %v %+v", err, res)
	}
	unknown := write(t, dir, "u.yaml", "resources: []\nsurprise: 1\n")
	if _, err := ResourcesFile(bs, KindCDS, unknown, Options{}); err == nil || errors.Is(err, ErrUnreadable) {
		t.Errorf("unknown field: %v", err)
	}
	broken := write(t, dir, "b.yaml", "resources: [\n")
	if _, err := ResourcesFile(bs, KindCDS, broken, Options{}); !errors.Is(err, ErrUnreadable) {
		t.Errorf("broken yaml: %v", err)
	}
	if _, err := ResourcesFile(bs, KindCDS, filepath.Join(dir, "nope.yaml"), Options{}); !errors.Is(err, ErrUnreadable) {
		t.Errorf("missing file: %v", err)
	}
}

// An LDS listener may use rds and the bootstrap's static secrets.
func TestResourcesFileListenerWithRDS(t *testing.T) {
	dir := t.TempDir()
	bs, err := load.Bytes([]byte("node: {id: a, cluster: b}\nstatic_resources:\n  secrets:\n  - name: s\n    generic_secret: {secret: {inline_string: v}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rdsPath := write(t, dir, "rds.yaml", "resources: []\n")
	lds := write(t, dir, "lds.yaml", `resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: l
  address: {socket_address: {address: 127.0.0.1, port_value: 1}}
  filter_chains:
  - filters:
    - name: hcm
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: p
        rds:
          route_config_name: r
          config_source: {path_config_source: {path: `+rdsPath+`}}
        http_filters:
        - name: g
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
            library_id: moe
            library_path: /x.so
            plugin_name: moe
            generic_secrets: [{name: s}]
        - name: envoy.filters.http.router
          typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`)
	res, err := ResourcesFile(bs, KindLDS, lds, Options{SkipLibraryCheck: true, SkipPluginCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	h := res.Listeners[0].HCM
	if h.RDS == nil || h.RDS.RouteConfigName != "r" || h.RDS.ConfigSource.Path != rdsPath || h.HTTPFilters[0].Golang.Secrets["s"] == "" || res.Listeners[0].Hash == "" {
		t.Fatalf("compiled listener: %+v", res.Listeners[0])
	}
}
