package xdstest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// featureListener is an LDS listener with an access log file and a route table from RDS.
func featureListener(name string, port int, logPath, rdsPath string) string {
	return fmt.Sprintf(`- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: %s
  address:
    socket_address: {address: 127.0.0.1, port_value: %d}
  filter_chains:
  - filters:
    - name: envoy.filters.network.http_connection_manager
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: %s
        access_log:
        - name: envoy.access_loggers.file
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
            path: %s
            log_format:
              text_format_source: {inline_string: "%%REQ(:PATH)%% %%RESPONSE_CODE%% %%UPSTREAM_CLUSTER%%\n"}
        rds:
          route_config_name: routes
          config_source:
            path_config_source: {path: %s}
        http_filters:
        - name: envoy.filters.http.router
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`, name, port, name, logPath, rdsPath)
}

// featureRoutes is the RDS table "routes": header lists on the table and the route, and a
// retry policy on the route.
func featureRoutes(version string) string {
	return fmt.Sprintf(`version_info: %q
resources:
- "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
  name: routes
  response_headers_to_add:
  - header: {key: x-table, value: %q}
  virtual_hosts:
  - name: all
    domains: ["*"]
    routes:
    - match: {prefix: /}
      request_headers_to_add:
      - header: {key: x-added, value: "in"}
      request_headers_to_remove: [x-drop]
      route:
        cluster: echo
        retry_policy: {retry_on: 5xx, num_retries: 2}
`, version, version)
}

// Listeners, routes and clusters that come by xDS get what static ones have: access logs,
// header lists, retries, listener and per-host stats, /clusters, and /config_dump shows them as
// Envoy's dynamic_listeners, dynamic_route_configs and dynamic_active_clusters.
func TestDynamicResourcesHaveTheStaticFeatures(t *testing.T) {
	f := newFiles(t)
	upstream := hosttest.EchoUpstream(t)
	port := hosttest.FreePort(t)
	logPath := f.path("access.log")
	f.put("cds.yaml", cds("c1", map[string]int{"echo": upstream}), true)
	f.put("rds.yaml", featureRoutes("r1"), true)
	f.put("lds.yaml", lds("l1", featureListener("dyn", port, logPath, f.path("rds.yaml"))), true)
	h := f.start(hosttest.Options{Args: []string{"--file-flush-interval-msec", "50"}})
	waitStat(t, h, "listener_manager.lds.update_success", 1, 10*time.Second)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	c := &http.Client{Timeout: 5 * time.Second}

	code, hdr, body := get(t, c, base+"/ok", "x-drop", "1")
	if code != http.StatusOK || hdr.Get("x-table") != "r1" {
		t.Errorf("GET /ok: status %d, x-table %q, want 200 and r1", code, hdr.Get("x-table"))
	}
	if !strings.Contains(body, `"x-added":["in"]`) || strings.Contains(body, "x-drop") {
		t.Errorf("upstream saw %s, want x-added and no x-drop", body)
	}
	if code, _, _ := get(t, c, base+"/status/503"); code != http.StatusServiceUnavailable {
		t.Errorf("GET /status/503: status %d", code)
	}
	if v := h.Counter(t, "cluster.echo.upstream_rq_retry"); v != 2 {
		t.Errorf("cluster.echo.upstream_rq_retry = %d, want 2 (num_retries of the RDS route)", v)
	}
	if v := h.Counter(t, fmt.Sprintf("listener.127.0.0.1_%d.http.dyn.downstream_rq_completed", port)); v != 2 {
		t.Errorf("listener stats of the LDS listener: downstream_rq_completed = %d, want 2", v)
	}

	want := "/ok 200 echo\n/status/503 503 echo\n"
	var got []byte
	if !tb.Poll(5*time.Second, func() bool { got, _ = os.ReadFile(logPath); return string(got) == want }) {
		t.Fatalf("access log of the LDS listener: %q, want %q", got, want)
	}

	clusters := adminGet(t, h, "/clusters")
	if line := fmt.Sprintf("echo::127.0.0.1:%d::rq_total::4", upstream); !strings.Contains(clusters, line+"\n") {
		t.Errorf("/clusters has no %q (per-host stats of a CDS cluster):\n%s", line, clusters)
	}

	var dump struct {
		Configs []map[string]json.RawMessage `json:"configs"`
	}
	raw := adminGet(t, h, "/config_dump")
	if err := json.Unmarshal([]byte(raw), &dump); err != nil {
		t.Fatalf("/config_dump: %v\n%s", err, raw)
	}
	byType := map[string]map[string]json.RawMessage{}
	for _, cfg := range dump.Configs {
		var typ string
		_ = json.Unmarshal(cfg["@type"], &typ)
		byType[strings.TrimPrefix(typ, "type.googleapis.com/envoy.admin.v3.")] = cfg
	}
	var listeners struct {
		VersionInfo      string `json:"version_info"`
		DynamicListeners []struct {
			Name        string `json:"name"`
			ActiveState struct {
				VersionInfo string                     `json:"version_info"`
				Listener    map[string]json.RawMessage `json:"listener"`
				LastUpdated string                     `json:"last_updated"`
			} `json:"active_state"`
		} `json:"dynamic_listeners"`
	}
	remarshal(t, byType["ListenersConfigDump"], &listeners)
	if listeners.VersionInfo != "l1" || len(listeners.DynamicListeners) != 1 || listeners.DynamicListeners[0].Name != "dyn" ||
		listeners.DynamicListeners[0].ActiveState.VersionInfo != "l1" || listeners.DynamicListeners[0].ActiveState.LastUpdated == "" ||
		string(listeners.DynamicListeners[0].ActiveState.Listener["name"]) != `"dyn"` {
		t.Errorf("ListenersConfigDump: %+v", listeners)
	}
	var cl struct {
		VersionInfo           string `json:"version_info"`
		DynamicActiveClusters []struct {
			VersionInfo string                     `json:"version_info"`
			Cluster     map[string]json.RawMessage `json:"cluster"`
		} `json:"dynamic_active_clusters"`
	}
	remarshal(t, byType["ClustersConfigDump"], &cl)
	if cl.VersionInfo != "c1" || len(cl.DynamicActiveClusters) != 1 || cl.DynamicActiveClusters[0].VersionInfo != "c1" ||
		string(cl.DynamicActiveClusters[0].Cluster["name"]) != `"echo"` {
		t.Errorf("ClustersConfigDump: %+v", cl)
	}
	var routes struct {
		DynamicRouteConfigs []struct {
			VersionInfo string                     `json:"version_info"`
			RouteConfig map[string]json.RawMessage `json:"route_config"`
		} `json:"dynamic_route_configs"`
	}
	remarshal(t, byType["RoutesConfigDump"], &routes)
	if len(routes.DynamicRouteConfigs) != 1 || routes.DynamicRouteConfigs[0].VersionInfo != "r1" ||
		string(routes.DynamicRouteConfigs[0].RouteConfig["name"]) != `"routes"` {
		t.Errorf("RoutesConfigDump: %+v", routes)
	}

	// A new route table version shows in the dump with its version.
	f.put("rds.yaml", featureRoutes("r2"), true)
	waitStat(t, h, "http.dyn.rds.routes.update_success", 2, 10*time.Second)
	if raw := adminGet(t, h, "/config_dump"); !strings.Contains(raw, `"version_info": "r2"`) {
		t.Errorf("/config_dump after the RDS update has no version r2")
	}
}

func adminGet(t *testing.T, h *hosttest.Host, path string) string {
	t.Helper()
	resp, err := http.Get(h.AdminURL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

func remarshal(t *testing.T, from map[string]json.RawMessage, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}
