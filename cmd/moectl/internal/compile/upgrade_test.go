package compile

import (
	"reflect"
	"testing"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
)

func TestUpgradeConfigsCompileLowercasedWithEnabledDefaultingToTrue(t *testing.T) {
	res, err := compileString(t, minimal(t, map[string]string{
		"HCM":    "upgrade_configs: [{upgrade_type: WebSocket}, {upgrade_type: spdy/3, enabled: false}]",
		"ACTION": "upgrade_configs: [{upgrade_type: websocket, enabled: false}, {upgrade_type: Spdy/3}]",
	}))
	if err != nil {
		t.Fatal(err)
	}
	hcm := res.Bootstrap.Listeners[0].HCM
	wantHCM := []bootstrap.UpgradeConfig{{UpgradeType: "websocket", Enabled: true}, {UpgradeType: "spdy/3", Enabled: false}}
	if !reflect.DeepEqual(hcm.UpgradeConfigs, wantHCM) {
		t.Errorf("hcm upgrade_configs = %+v, want %+v", hcm.UpgradeConfigs, wantHCM)
	}
	var route *bootstrap.RouteAction
	for _, r := range hcm.RouteConfig.VirtualHosts[0].Routes {
		if r.Route != nil && len(r.Route.UpgradeConfigs) > 0 {
			route = r.Route
		}
	}
	if route == nil {
		t.Fatal("no route kept its upgrade_configs")
	}
	wantRoute := []bootstrap.UpgradeConfig{{UpgradeType: "websocket", Enabled: false}, {UpgradeType: "spdy/3", Enabled: true}}
	if !reflect.DeepEqual(route.UpgradeConfigs, wantRoute) {
		t.Errorf("route upgrade_configs = %+v, want %+v", route.UpgradeConfigs, wantRoute)
	}
}

func TestUpgradeConfigsMoeHostCannotRunAreRefused(t *testing.T) {
	cases := []struct {
		name     string
		snippets map[string]string
		want     string
	}{
		{"duplicate hcm type, case-insensitively", map[string]string{"HCM": "upgrade_configs: [{upgrade_type: websocket}, {upgrade_type: WEBSOCKET}]"},
			hcmPath + ".upgrade_configs[1].upgrade_type: multiple upgrade configs with the same name: 'WEBSOCKET'"},
		{"duplicate route type", map[string]string{"ACTION": "upgrade_configs: [{upgrade_type: websocket}, {upgrade_type: WebSocket}]"},
			routePath + ".route.upgrade_configs[1].upgrade_type: Duplicate upgrade WebSocket"},
		{"upgrade filter chain", map[string]string{"HCM": "upgrade_configs: [{upgrade_type: websocket, filters: [{name: r, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}]"},
			hcmPath + ".upgrade_configs[0].filters: not supported by moe-host"},
		{"CONNECT on the hcm", map[string]string{"HCM": "upgrade_configs: [{upgrade_type: CONNECT}]"},
			hcmPath + ".upgrade_configs[0].upgrade_type: CONNECT is not supported by moe-host (no CONNECT tunnelling)"},
		{"CONNECT on a route", map[string]string{"ACTION": "upgrade_configs: [{upgrade_type: connect, connect_config: {}}]"},
			routePath + ".route.upgrade_configs[0].connect_config: not supported by moe-host"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileString(t, minimal(t, c.snippets))
			wantError(t, err, c.want)
		})
	}
}
