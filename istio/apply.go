// Package istio holds moe's Istio deployment files (EnvoyFilters, the gateway deployment
// patches, Helm and IstioOperator values, the walkthrough) and the Istio knowledge moectl
// uses to check EnvoyFilters offline: representative gateway and sidecar listeners, and
// Apply, which applies an EnvoyFilter's HTTP filter and route patches to them the way istiod
// does (INSERT_BEFORE the router, MERGE into a route found by virtual host and route name).
//
// Apply is a model of istiod, written from Istio's documented EnvoyFilter semantics; the
// istiodcheck module next to this package checks the same files against istiod itself.
package istio

import (
	"fmt"
	"strconv"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	networking "istio.io/api/networking/v1alpha3"
)

const (
	// GolangFilterName is the HTTP filter name the golang filter is inserted under; per-route
	// config is looked up in typed_per_filter_config under the same name.
	GolangFilterName = "envoy.filters.http.golang"
	// HCMName is the network filter name of the HTTP connection manager.
	HCMName = "envoy.filters.network.http_connection_manager"
	// RouterName is the router's HTTP filter name.
	RouterName = "envoy.filters.http.router"
	// LibraryPath is where the deployment patches put libgolang.so in istio-proxy.
	LibraryPath = "/etc/moe/libgolang.so"
)

// Context is the kind of proxy a representative config is for.
type Context int

const (
	Gateway         Context = iota // istio-ingressgateway, port 80
	SidecarInbound                 // a sidecar's inbound listener, port 8080
	SidecarOutbound                // a sidecar's outbound HTTP listener, port 8000
)

func (c Context) patchContext() networking.EnvoyFilter_PatchContext {
	switch c {
	case SidecarInbound:
		return networking.EnvoyFilter_SIDECAR_INBOUND
	case SidecarOutbound:
		return networking.EnvoyFilter_SIDECAR_OUTBOUND
	}
	return networking.EnvoyFilter_GATEWAY
}

// Port is the representative port of the context.
func (c Context) Port() uint32 {
	switch c {
	case SidecarInbound:
		return 8080
	case SidecarOutbound:
		return 8000
	}
	return 80
}

// RouteConfigName is what istiod names the route table of the context's port.
func (c Context) RouteConfigName() string {
	switch c {
	case SidecarInbound:
		return "inbound|8080||"
	case SidecarOutbound:
		return "8000"
	}
	return "http.80"
}

// VirtualHostName is the virtual host istiod builds for a VirtualService host "*" (gateway),
// or for the demo's inbound port (sidecar: Service port 8000, container port 8080).
func (c Context) VirtualHostName() string {
	switch c {
	case SidecarInbound:
		return "inbound|http|8000" // the Service port; the route table is the target port's
	case SidecarOutbound:
		return "httpbin.demo.svc.cluster.local:8000"
	}
	return "*:80"
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

// NewPatchValue is the Envoy message a patch value of applyTo is (as istiod decodes it), or nil.
func NewPatchValue(a networking.EnvoyFilter_ApplyTo) proto.Message {
	switch a {
	case networking.EnvoyFilter_CLUSTER:
		return &clusterv3.Cluster{}
	case networking.EnvoyFilter_LISTENER:
		return &listenerv3.Listener{}
	case networking.EnvoyFilter_ROUTE_CONFIGURATION:
		return &routev3.RouteConfiguration{}
	case networking.EnvoyFilter_FILTER_CHAIN:
		return &listenerv3.FilterChain{}
	case networking.EnvoyFilter_HTTP_FILTER:
		return &hcmv3.HttpFilter{}
	case networking.EnvoyFilter_NETWORK_FILTER:
		return &listenerv3.Filter{}
	case networking.EnvoyFilter_VIRTUAL_HOST:
		return &routev3.VirtualHost{}
	case networking.EnvoyFilter_HTTP_ROUTE:
		return &routev3.Route{}
	case networking.EnvoyFilter_EXTENSION_CONFIG:
		return &corev3.TypedExtensionConfig{}
	case networking.EnvoyFilter_BOOTSTRAP:
		return &bootstrapv3.Bootstrap{}
	case networking.EnvoyFilter_LISTENER_FILTER:
		return &listenerv3.ListenerFilter{}
	}
	return nil
}

// RepresentativeHCM is an HTTP connection manager like istiod's for the context: a few
// filters before the router (only upstream Envoy types, so Envoy's protos check it all),
// routes by RDS, or inline for sidecar inbound.
func RepresentativeHCM(c Context, routes ...string) *hcmv3.HttpConnectionManager {
	h := &hcmv3.HttpConnectionManager{
		StatPrefix: "outbound_0.0.0.0_" + strconv.Itoa(int(c.Port())),
		HttpFilters: []*hcmv3.HttpFilter{
			{Name: "envoy.filters.http.fault", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&faultv3.HTTPFault{})}},
			{Name: "envoy.filters.http.cors", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&corsv3.Cors{})}},
			{Name: RouterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerv3.Router{})}},
		},
		UseRemoteAddress: wrapperspb.Bool(c == Gateway),
	}
	if c == SidecarInbound {
		h.StatPrefix = "inbound_0.0.0.0_8080"
		h.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: RepresentativeRoutes(c, routes...)}
	} else {
		h.RouteSpecifier = &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: c.RouteConfigName(),
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}, ResourceApiVersion: corev3.ApiVersion_V3},
		}}
	}
	return h
}

// RepresentativeListener is the context's listener with one HTTP filter chain.
func RepresentativeListener(c Context, routes ...string) *listenerv3.Listener {
	name := "0.0.0.0_" + strconv.Itoa(int(c.Port()))
	port := c.Port()
	var match *listenerv3.FilterChainMatch
	if c == SidecarInbound {
		name, port = "virtualInbound", 15006
		match = &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(c.Port())}
	}
	return &listenerv3.Listener{
		Name: name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
		FilterChains: []*listenerv3.FilterChain{{
			FilterChainMatch: match,
			Filters: []*listenerv3.Filter{{
				Name:       HCMName,
				ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(RepresentativeHCM(c, routes...))},
			}},
		}},
	}
}

// RepresentativeRoute is a route to a cluster, named name (a VirtualService http[].name).
func RepresentativeRoute(name ...string) *routev3.Route {
	r := &routev3.Route{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "outbound|8000||httpbin.demo.svc.cluster.local"}}},
	}
	if len(name) > 0 {
		r.Name = name[0]
	}
	return r
}

// RepresentativeRoutes is the context's route table: one virtual host with one route per
// name (default: "default").
func RepresentativeRoutes(c Context, routes ...string) *routev3.RouteConfiguration {
	if len(routes) == 0 {
		routes = []string{"default"}
	}
	vh := &routev3.VirtualHost{Name: c.VirtualHostName(), Domains: []string{"*"}}
	for _, n := range routes {
		vh.Routes = append(vh.Routes, RepresentativeRoute(n))
	}
	return &routev3.RouteConfiguration{Name: c.RouteConfigName(), VirtualHosts: []*routev3.VirtualHost{vh}, ValidateClusters: wrapperspb.Bool(false)}
}

// Problem is something wrong with one patch, found by applying it.
type Problem struct {
	Patch   int // index in spec.configPatches
	Message string
	Warning bool // the patch does not apply here; with Warning false, Envoy would refuse the result
}

// Result is a representative config after Apply.
type Result struct {
	Listener *listenerv3.Listener
	Routes   *routev3.RouteConfiguration
	// Applied counts, per patch index, the objects it changed.
	Applied  []int
	Problems []Problem
}

// Apply applies ef's HTTP_FILTER, HTTP_ROUTE, VIRTUAL_HOST and ROUTE_CONFIGURATION patches
// (values[i] is patch i's decoded value, nil when it did not decode) to the context's
// representative listener and route table with the given route names, and checks the HTTP
// filter chains of the result as Envoy does when it builds them.
func Apply(c Context, ef *networking.EnvoyFilter, values []proto.Message, routes ...string) *Result {
	res := &Result{Listener: RepresentativeListener(c, routes...), Routes: RepresentativeRoutes(c, routes...)}
	res.Applied = make([]int, len(ef.GetConfigPatches()))
	var hcms []*hcmv3.HttpConnectionManager
	for _, fc := range res.Listener.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			h := &hcmv3.HttpConnectionManager{}
			if f.GetName() == HCMName && f.GetTypedConfig().UnmarshalTo(h) == nil {
				hcms = append(hcms, h)
			}
		}
	}
	for i, cp := range ef.GetConfigPatches() {
		if i >= len(values) || (values[i] == nil && cp.GetPatch().GetOperation() != networking.EnvoyFilter_Patch_REMOVE) {
			continue
		}
		if ctx := cp.GetMatch().GetContext(); ctx != networking.EnvoyFilter_ANY && ctx != c.patchContext() {
			continue
		}
		switch cp.GetApplyTo() {
		case networking.EnvoyFilter_HTTP_FILTER:
			if !listenerMatches(c, res.Listener, cp.GetMatch().GetListener()) {
				continue
			}
			for _, h := range hcms {
				n, msg := patchHTTPFilters(h, cp, values[i])
				res.Applied[i] += n
				if msg != "" {
					res.Problems = append(res.Problems, Problem{Patch: i, Message: msg, Warning: true})
				}
			}
		case networking.EnvoyFilter_HTTP_ROUTE, networking.EnvoyFilter_VIRTUAL_HOST, networking.EnvoyFilter_ROUTE_CONFIGURATION:
			rcs := []*routev3.RouteConfiguration{res.Routes}
			if c == SidecarInbound {
				rcs = nil
				for _, h := range hcms {
					rcs = append(rcs, h.GetRouteConfig())
				}
			}
			for _, rc := range rcs {
				res.Applied[i] += patchRoutes(c, rc, cp, values[i])
			}
		}
	}
	// Write the patched connection managers back and check them.
	k := 0
	for _, fc := range res.Listener.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			if f.GetName() != HCMName {
				continue
			}
			h := hcms[k]
			k++
			if c == SidecarInbound {
				res.Routes = h.GetRouteConfig()
			}
			f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(h)}
			for _, msg := range checkFilterChain(h) {
				res.Problems = append(res.Problems, Problem{Patch: lastHTTPFilterPatch(ef), Message: msg})
			}
		}
	}
	for i, cp := range ef.GetConfigPatches() {
		ctx := cp.GetMatch().GetContext()
		if res.Applied[i] == 0 && (ctx == c.patchContext() || ctx == networking.EnvoyFilter_ANY) && values != nil && i < len(values) && values[i] != nil &&
			isModelled(cp.GetApplyTo()) && len(routes) > 0 {
			res.Problems = append(res.Problems, Problem{Patch: i, Warning: true, Message: fmt.Sprintf(
				"matches nothing in a representative %s config with routes %v", ctxName(c), routes)})
		}
	}
	return res
}

func ctxName(c Context) string {
	switch c {
	case SidecarInbound:
		return "sidecar inbound"
	case SidecarOutbound:
		return "sidecar outbound"
	}
	return "gateway"
}

func isModelled(a networking.EnvoyFilter_ApplyTo) bool {
	switch a {
	case networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_HTTP_ROUTE, networking.EnvoyFilter_VIRTUAL_HOST, networking.EnvoyFilter_ROUTE_CONFIGURATION:
		return true
	}
	return false
}

func lastHTTPFilterPatch(ef *networking.EnvoyFilter) int {
	last := 0
	for i, cp := range ef.GetConfigPatches() {
		if cp.GetApplyTo() == networking.EnvoyFilter_HTTP_FILTER {
			last = i
		}
	}
	return last
}

// listenerMatches is the listener part of a patch's match against a representative listener.
func listenerMatches(c Context, l *listenerv3.Listener, m *networking.EnvoyFilter_ListenerMatch) bool {
	if m == nil {
		return true
	}
	if m.GetName() != "" && m.GetName() != l.GetName() {
		return false
	}
	if p := m.GetPortNumber(); p != 0 && p != c.Port() {
		return false
	}
	if f := m.GetFilterChain().GetFilter(); f != nil && f.GetName() != HCMName && f.GetName() != "envoy.http_connection_manager" {
		return false
	}
	return true
}

// patchHTTPFilters applies one HTTP_FILTER patch to a connection manager's filters: the
// operations are relative to the filter the subFilter match names.
func patchHTTPFilters(h *hcmv3.HttpConnectionManager, cp *networking.EnvoyFilter_EnvoyConfigObjectPatch, value proto.Message) (int, string) {
	sub := cp.GetMatch().GetListener().GetFilterChain().GetFilter().GetSubFilter().GetName()
	idx := -1
	for i, f := range h.GetHttpFilters() {
		if f.GetName() == sub {
			idx = i
			break
		}
	}
	var v *hcmv3.HttpFilter
	if value != nil {
		v, _ = proto.Clone(value).(*hcmv3.HttpFilter)
	}
	fs := h.GetHttpFilters()
	op := cp.GetPatch().GetOperation()
	needsTarget := op == networking.EnvoyFilter_Patch_INSERT_BEFORE || op == networking.EnvoyFilter_Patch_INSERT_AFTER ||
		op == networking.EnvoyFilter_Patch_REPLACE || op == networking.EnvoyFilter_Patch_REMOVE || op == networking.EnvoyFilter_Patch_MERGE
	if needsTarget && sub != "" && idx < 0 {
		return 0, fmt.Sprintf("no HTTP filter named %q: the patch does not apply", sub)
	}
	switch op {
	case networking.EnvoyFilter_Patch_ADD:
		fs = append(fs, v)
	case networking.EnvoyFilter_Patch_INSERT_FIRST:
		fs = append([]*hcmv3.HttpFilter{v}, fs...)
	case networking.EnvoyFilter_Patch_INSERT_BEFORE:
		if sub == "" {
			fs = append([]*hcmv3.HttpFilter{v}, fs...)
		} else {
			fs = append(fs[:idx], append([]*hcmv3.HttpFilter{v}, fs[idx:]...)...)
		}
	case networking.EnvoyFilter_Patch_INSERT_AFTER:
		if sub == "" {
			fs = append(fs, v)
		} else {
			fs = append(fs[:idx+1], append([]*hcmv3.HttpFilter{v}, fs[idx+1:]...)...)
		}
	case networking.EnvoyFilter_Patch_REPLACE:
		if idx < 0 {
			return 0, ""
		}
		fs[idx] = v
	case networking.EnvoyFilter_Patch_REMOVE:
		if idx < 0 {
			return 0, ""
		}
		fs = append(fs[:idx], fs[idx+1:]...)
	case networking.EnvoyFilter_Patch_MERGE:
		if idx < 0 {
			return 0, ""
		}
		mergeFilter(fs[idx], v)
	default:
		return 0, ""
	}
	h.HttpFilters = fs
	return 1, ""
}

// mergeFilter merges a filter patch; typed_configs of the same type merge field by field, as
// istiod merges them (a plain proto merge would concatenate the Any's bytes).
func mergeFilter(dst, src *hcmv3.HttpFilter) {
	if src == nil {
		return
	}
	dtc, stc := dst.GetTypedConfig(), src.GetTypedConfig()
	if dtc != nil && stc != nil && dtc.GetTypeUrl() == stc.GetTypeUrl() {
		a, errA := dtc.UnmarshalNew()
		b, errB := stc.UnmarshalNew()
		if errA == nil && errB == nil {
			proto.Merge(a, b)
			src = proto.Clone(src).(*hcmv3.HttpFilter)
			src.ConfigType = nil
			proto.Merge(dst, src)
			dst.ConfigType = &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(a)}
			return
		}
	}
	proto.Merge(dst, src)
}

// patchRoutes applies a route-level patch to a route table; it returns how many objects it
// changed.
func patchRoutes(c Context, rc *routev3.RouteConfiguration, cp *networking.EnvoyFilter_EnvoyConfigObjectPatch, value proto.Message) int {
	m := cp.GetMatch().GetRouteConfiguration()
	if m != nil {
		if m.GetName() != "" && m.GetName() != rc.GetName() {
			return 0
		}
		if p := m.GetPortNumber(); p != 0 && p != c.Port() {
			return 0
		}
	}
	op := cp.GetPatch().GetOperation()
	if cp.GetApplyTo() == networking.EnvoyFilter_ROUTE_CONFIGURATION {
		if op == networking.EnvoyFilter_Patch_MERGE && value != nil {
			proto.Merge(rc, value)
			return 1
		}
		return 0
	}
	n := 0
	for vi, vh := range rc.GetVirtualHosts() {
		if name := m.GetVhost().GetName(); name != "" && name != vh.GetName() {
			continue
		}
		if cp.GetApplyTo() == networking.EnvoyFilter_VIRTUAL_HOST {
			switch op {
			case networking.EnvoyFilter_Patch_MERGE:
				proto.Merge(vh, value)
			case networking.EnvoyFilter_Patch_REPLACE:
				rc.VirtualHosts[vi] = proto.Clone(value).(*routev3.VirtualHost)
			default:
				continue
			}
			n++
			continue
		}
		for ri, r := range vh.GetRoutes() {
			if name := m.GetVhost().GetRoute().GetName(); name != "" && name != r.GetName() {
				continue
			}
			switch op {
			case networking.EnvoyFilter_Patch_MERGE:
				proto.Merge(r, value)
			case networking.EnvoyFilter_Patch_REPLACE:
				vh.Routes[ri] = proto.Clone(value).(*routev3.Route)
			default:
				continue
			}
			n++
		}
	}
	return n
}

// checkFilterChain is what Envoy checks when it builds an HTTP filter chain: the router is
// last, and filter names are unique (per-route configs are looked up by name).
func checkFilterChain(h *hcmv3.HttpConnectionManager) []string {
	var out []string
	fs := h.GetHttpFilters()
	names := map[string]int{}
	for i, f := range fs {
		if j, dup := names[f.GetName()]; dup {
			out = append(out, fmt.Sprintf("after the patches, HTTP filters %d and %d are both named %q (the golang filter was added twice?)", j, i, f.GetName()))
		}
		names[f.GetName()] = i
		isRouter := f.GetTypedConfig().MessageIs(&routerv3.Router{})
		switch {
		case isRouter && i != len(fs)-1:
			out = append(out, fmt.Sprintf("after the patches, %q follows the router: Envoy refuses a filter chain whose router is not last (insert with INSERT_BEFORE %s)", fs[i+1].GetName(), RouterName))
		case !isRouter && i == len(fs)-1:
			out = append(out, fmt.Sprintf("after the patches, the last HTTP filter is %q, not the router: Envoy refuses the listener", f.GetName()))
		}
	}
	return out
}
