package compile

import (
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Both upgrade_configs lists (the connection manager's and a route's) compile to the same
// entries: the type lowercased (Envoy compares types case-insensitively) and enabled, which
// defaults to true in both (http_connection_manager/config.cc:748, router/config_impl.cc:692).

// hcmUpgradeConfigs compiles HttpConnectionManager.upgrade_configs. Upgrade filter chains
// (filters) are refused: moe-host runs the connection manager's http_filters on an upgraded
// stream. CONNECT is refused: moe-host does not tunnel CONNECT.
func (c *compiler) hcmUpgradeConfigs(p ypath.Path, ucs []*hcmv3.HttpConnectionManager_UpgradeConfig) []bootstrap.UpgradeConfig {
	entries := make([]upgradeConfig, len(ucs))
	for i, uc := range ucs {
		entries[i] = uc
	}
	// config.cc:749-753 (types compared case-insensitively).
	return c.upgradeConfigs(p, entries, "multiple upgrade configs with the same name: '%s'")
}

// routeUpgradeConfigs compiles RouteAction.upgrade_configs: per-route enable or disable of an
// upgrade type, over the connection manager's (config.cc:867-897 createUpgradeFilterChain).
func (c *compiler) routeUpgradeConfigs(p ypath.Path, ucs []*routev3.RouteAction_UpgradeConfig) []bootstrap.UpgradeConfig {
	entries := make([]upgradeConfig, len(ucs))
	for i, uc := range ucs {
		entries[i] = uc
	}
	// config_impl.cc:693-701: keys are lowercased, a duplicate is an error.
	return c.upgradeConfigs(p, entries, "Duplicate upgrade %s")
}

// upgradeConfig is what both protos' entries have in common.
type upgradeConfig interface {
	proto.Message
	GetUpgradeType() string
	GetEnabled() *wrapperspb.BoolValue
}

// upgradeConfigs compiles either list; duplicate is Envoy's message for a repeated type
// (the connection manager and the router word it differently).
func (c *compiler) upgradeConfigs(p ypath.Path, ucs []upgradeConfig, duplicate string) []bootstrap.UpgradeConfig {
	var out []bootstrap.UpgradeConfig
	seen := map[string]bool{}
	for i, uc := range ucs {
		up := p.Index(i)
		c.only(up, uc, "upgrade_type", "enabled")
		t := strings.ToLower(uc.GetUpgradeType())
		if seen[t] {
			c.errs.Addf(up.Field("upgrade_type"), duplicate, uc.GetUpgradeType())
		}
		seen[t] = true
		c.refuseConnectUpgrade(up, t)
		out = append(out, bootstrap.UpgradeConfig{UpgradeType: t, Enabled: enabledOrTrue(uc.GetEnabled().GetValue(), uc.GetEnabled() != nil)})
	}
	return out
}

func (c *compiler) refuseConnectUpgrade(p ypath.Path, lowerType string) {
	if lowerType == "connect" {
		c.errs.Addf(p.Field("upgrade_type"), "CONNECT is not supported by moe-host (no CONNECT tunnelling)")
	}
}

func enabledOrTrue(v, set bool) bool {
	if !set {
		return true
	}
	return v
}
