package xdstest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// upgradeListener is an LDS listener whose connection manager has hcmUpgrades as its
// upgrade_configs and its routes from rdsPath.
func upgradeListener(port int, hcmUpgrades, rdsPath string) string {
	return fmt.Sprintf(`- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: ws
  address:
    socket_address: {address: 127.0.0.1, port_value: %d}
  filter_chains:
  - filters:
    - name: envoy.filters.network.http_connection_manager
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: ws
        upgrade_configs: %s
        rds:
          route_config_name: routes
          config_source:
            path_config_source: {path: %s}
        http_filters:
        - name: envoy.filters.http.router
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`, port, hcmUpgrades, rdsPath)
}

// upgradeRoutes is the RDS table "routes": one route to the echo cluster with routeUpgrades
// as its upgrade_configs.
func upgradeRoutes(version, routeUpgrades string) string {
	return fmt.Sprintf(`version_info: %q
resources:
- "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
  name: routes
  virtual_hosts:
  - name: all
    domains: ["*"]
    routes:
    - match: {prefix: /}
      route: {cluster: echo, upgrade_configs: %s}
`, version, routeUpgrades)
}

func dialStatus(t *testing.T, url string) int {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.Dial(url, nil)
	if c != nil {
		defer c.Close()
	}
	if resp == nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	return resp.StatusCode
}

// upgrade_configs that come by LDS and RDS work as static ones, a new route table version
// changes what a route allows, and /config_dump shows them.
func TestUpgradeConfigsFromListenerAndRouteFiles(t *testing.T) {
	f := newFiles(t)
	upstream := hosttest.EchoUpstream(t)
	port := hosttest.FreePort(t)
	f.put("cds.yaml", cds("c1", map[string]int{"echo": upstream}), true)
	f.put("rds.yaml", upgradeRoutes("r1", "[{upgrade_type: websocket, enabled: false}]"), true)
	f.put("lds.yaml", lds("l1", upgradeListener(port, "[{upgrade_type: websocket}]", f.path("rds.yaml"))), true)
	h := f.start()
	waitStat(t, h, "http.ws.rds.routes.update_success", 1, 10*time.Second)
	ws := fmt.Sprintf("ws://127.0.0.1:%d/ws", port)

	if got := dialStatus(t, ws); got != 403 {
		t.Fatalf("route disables websocket (RDS r1): status %d, want 403", got)
	}
	f.put("rds.yaml", upgradeRoutes("r2", "[]"), true)
	waitStat(t, h, "http.ws.rds.routes.update_success", 2, 10*time.Second)
	if got := dialStatus(t, ws); got != 101 {
		t.Fatalf("route without upgrade_configs under an HCM that allows websocket (RDS r2): status %d, want 101", got)
	}
	if got := h.Counter(t, "http.ws.downstream_cx_upgrades_total"); got != 1 {
		t.Fatalf("downstream_cx_upgrades_total = %d, want 1", got)
	}
	dump := adminGet(t, h, "/config_dump")
	if !strings.Contains(dump, `"upgrade_configs"`) || !strings.Contains(dump, `"upgrade_type": "websocket"`) {
		t.Fatalf("/config_dump does not show the upgrade_configs:\n%s", dump)
	}
}
