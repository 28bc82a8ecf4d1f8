package compile

import (
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Envoy's default route timeout (route_components.proto RouteAction.timeout).
const defaultRouteTimeoutMS = 15000

// routeConfig compiles the inline route_config. filters are the connection manager's http
// filters, which typed_per_filter_config keys must name.
func (c *compiler) routeConfig(p ypath.Path, rc *routev3.RouteConfiguration, filters map[string]bootstrap.HTTPFilter) bootstrap.RouteConfiguration {
	c.only(p, rc, "name", "virtual_hosts", "typed_per_filter_config", "validate_clusters",
		"request_headers_to_add", "request_headers_to_remove", "response_headers_to_add",
		"response_headers_to_remove", "most_specific_header_mutations_wins")
	out := bootstrap.RouteConfiguration{
		Name:            rc.GetName(),
		PerFilterConfig: c.perFilterConfig(p.Field("typed_per_filter_config"), rc.GetTypedPerFilterConfig(), filters),
		VirtualHosts:    []bootstrap.VirtualHost{},
		Headers: c.headerMutations(p, headerLists{rc.GetRequestHeadersToAdd(), rc.GetRequestHeadersToRemove(),
			rc.GetResponseHeadersToAdd(), rc.GetResponseHeadersToRemove()}),
		MostSpecificHeaderMutationsWins: rc.GetMostSpecificHeaderMutationsWins(),
	}
	// validate_clusters defaults to true for an inline route_config and to false for one that
	// comes by RDS (filters == nil); with CDS, clusters arrive later and only the host knows.
	check := rc.GetValidateClusters().GetValue()
	if rc.GetValidateClusters() == nil {
		check = filters != nil
	}
	rs := routeScope{filters: filters, checkClusters: check && !c.cds}
	domainOwner := map[string]int{}
	for i, vh := range rc.GetVirtualHosts() {
		vp := p.Field("virtual_hosts").Index(i)
		c.only(vp, vh, "name", "domains", "routes", "typed_per_filter_config", "request_headers_to_add",
			"request_headers_to_remove", "response_headers_to_add", "response_headers_to_remove", "retry_policy",
			"include_request_attempt_count", "include_attempt_count_in_response")
		for j, d := range vh.GetDomains() {
			// Envoy refuses a domain claimed twice in one route config; it compares lower-cased.
			key := strings.ToLower(d)
			if owner, dup := domainOwner[key]; dup {
				c.errs.Addf(vp.Field("domains").Index(j), "domain %q is already used by virtual_hosts[%d]", d, owner)
			}
			domainOwner[key] = i
		}
		v := bootstrap.VirtualHost{
			Name:            vh.GetName(),
			Domains:         append([]string{}, vh.GetDomains()...),
			PerFilterConfig: c.perFilterConfig(vp.Field("typed_per_filter_config"), vh.GetTypedPerFilterConfig(), filters),
			Routes:          []bootstrap.Route{},
			Headers: c.headerMutations(vp, headerLists{vh.GetRequestHeadersToAdd(), vh.GetRequestHeadersToRemove(),
				vh.GetResponseHeadersToAdd(), vh.GetResponseHeadersToRemove()}),
			IncludeRequestAttemptCount:    vh.GetIncludeRequestAttemptCount(),
			IncludeAttemptCountInResponse: vh.GetIncludeAttemptCountInResponse(),
		}
		vrs := rs
		vrs.vhostRetry = c.retryPolicy(vp.Field("retry_policy"), vh.GetRetryPolicy())
		for j, r := range vh.GetRoutes() {
			v.Routes = append(v.Routes, c.route(vp.Field("routes").Index(j), r, vrs))
		}
		out.VirtualHosts = append(out.VirtualHosts, v)
	}
	return out
}

// routeScope is what routes need from their route configuration.
type routeScope struct {
	filters map[string]bootstrap.HTTPFilter
	// checkClusters mirrors validate_clusters, on by default for inline route configs.
	checkClusters bool
	// vhostRetry is the virtual host's retry_policy, the routes' default
	// (config_impl.cc buildRetryPolicy).
	vhostRetry *bootstrap.RetryPolicy
}

func (c *compiler) route(p ypath.Path, r *routev3.Route, rs routeScope) bootstrap.Route {
	c.only(p, r, "name", "match", "route", "direct_response", "typed_per_filter_config", "request_headers_to_add",
		"request_headers_to_remove", "response_headers_to_add", "response_headers_to_remove")
	out := bootstrap.Route{
		Name:            r.GetName(),
		Match:           c.routeMatch(p.Field("match"), r.GetMatch()),
		PerFilterConfig: c.perFilterConfig(p.Field("typed_per_filter_config"), r.GetTypedPerFilterConfig(), rs.filters),
		Headers: c.headerMutations(p, headerLists{r.GetRequestHeadersToAdd(), r.GetRequestHeadersToRemove(),
			r.GetResponseHeadersToAdd(), r.GetResponseHeadersToRemove()}),
	}
	switch a := r.GetAction().(type) {
	case *routev3.Route_Route:
		out.Route = c.routeAction(p.Field("route"), a.Route, rs)
	case *routev3.Route_DirectResponse:
		out.DirectResponse = c.directResponse(p.Field("direct_response"), a.DirectResponse)
	}
	return out
}

func (c *compiler) routeAction(p ypath.Path, a *routev3.RouteAction, rs routeScope) *bootstrap.RouteAction {
	c.only(p, a, "cluster", "cluster_header", "weighted_clusters", "prefix_rewrite", "host_rewrite_literal", "timeout",
		"cluster_not_found_response_code", "retry_policy", "upgrade_configs")
	out := &bootstrap.RouteAction{
		Cluster:                     a.GetCluster(),
		ClusterHeader:               a.GetClusterHeader(),
		WeightedClusters:            []bootstrap.WeightedCluster{},
		TimeoutMS:                   c.millis(p.Field("timeout"), a.GetTimeout(), defaultRouteTimeoutMS),
		ClusterNotFoundResponseCode: clusterNotFoundStatus[a.GetClusterNotFoundResponseCode()],
		RetryPolicy:                 rs.vhostRetry,
		UpgradeConfigs:              c.routeUpgradeConfigs(p.Field("upgrade_configs"), a.GetUpgradeConfigs()),
	}
	// The route's retry_policy replaces the virtual host's entirely (buildRetryPolicy).
	if a.GetRetryPolicy() != nil {
		out.RetryPolicy = c.retryPolicy(p.Field("retry_policy"), a.GetRetryPolicy())
	}
	if _, ok := a.GetClusterSpecifier().(*routev3.RouteAction_Cluster); ok {
		c.knownCluster(p.Field("cluster"), a.GetCluster(), rs)
	}
	if wc := a.GetWeightedClusters(); wc != nil {
		wp := p.Field("weighted_clusters")
		c.only(wp, wc, "clusters")
		var total uint64
		for i, cw := range wc.GetClusters() {
			cp := wp.Field("clusters").Index(i)
			c.only(cp, cw, "name", "weight")
			c.knownCluster(cp.Field("name"), cw.GetName(), rs)
			w := cw.GetWeight().GetValue()
			total += uint64(w)
			out.WeightedClusters = append(out.WeightedClusters, bootstrap.WeightedCluster{Name: cw.GetName(), Weight: w})
		}
		if total == 0 {
			c.errs.Addf(wp, "the sum of weights must be greater than 0")
		}
	}
	if a.GetPrefixRewrite() != "" {
		s := a.GetPrefixRewrite()
		out.PrefixRewrite = &s
	}
	if h, ok := a.GetHostRewriteSpecifier().(*routev3.RouteAction_HostRewriteLiteral); ok {
		s := h.HostRewriteLiteral
		out.HostRewriteLiteral = &s
	}
	return out
}

// clusterNotFoundStatus maps RouteAction.ClusterNotFoundResponseCode to the status Envoy answers
// (source/common/router/config_utility.cc parseClusterNotFoundResponseCode); ValidateAll has
// refused undefined values already.
var clusterNotFoundStatus = map[routev3.RouteAction_ClusterNotFoundResponseCode]uint32{
	routev3.RouteAction_SERVICE_UNAVAILABLE:   503,
	routev3.RouteAction_NOT_FOUND:             404,
	routev3.RouteAction_INTERNAL_SERVER_ERROR: 500,
}

func (c *compiler) knownCluster(p ypath.Path, name string, rs routeScope) {
	if rs.checkClusters && !c.clusters[name] {
		c.errs.Addf(p, "unknown cluster %q (not in static_resources.clusters)", name)
	}
}

func (c *compiler) directResponse(p ypath.Path, d *routev3.DirectResponseAction) *bootstrap.DirectResponse {
	c.only(p, d, "status", "body")
	c.only(p.Field("body"), d.GetBody(), "inline_string")
	return &bootstrap.DirectResponse{Status: d.GetStatus(), Body: d.GetBody().GetInlineString()}
}
