package compile

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Envoy defaults (cluster.proto).
const (
	defaultConnectTimeoutMS = 5000
	defaultDNSRefreshRateMS = 5000
	defaultBufferLimit      = 1024 * 1024
)

func (c *compiler) cluster(p ypath.Path, cl *clusterv3.Cluster) (bootstrap.Cluster, bool) {
	c.only(p, cl, "name", "type", "connect_timeout", "dns_refresh_rate", "load_assignment",
		"per_connection_buffer_limit_bytes")
	if c.clusters[cl.GetName()] {
		c.errs.Addf(p.Field("name"), "cluster name %q is already used", cl.GetName())
		return bootstrap.Cluster{}, false
	}
	c.clusters[cl.GetName()] = true
	out := bootstrap.Cluster{
		Name:                          cl.GetName(),
		ConnectTimeoutMS:              c.millis(p.Field("connect_timeout"), cl.GetConnectTimeout(), defaultConnectTimeoutMS),
		DNSRefreshRateMS:              c.millis(p.Field("dns_refresh_rate"), cl.GetDnsRefreshRate(), defaultDNSRefreshRateMS),
		PerConnectionBufferLimitBytes: u32(cl.GetPerConnectionBufferLimitBytes(), defaultBufferLimit),
		Endpoints:                     []bootstrap.SocketAddress{},
	}
	switch cl.GetType() {
	case clusterv3.Cluster_STATIC:
		out.Type = bootstrap.ClusterStatic
	case clusterv3.Cluster_STRICT_DNS:
		out.Type = bootstrap.ClusterStrictDNS
	default:
		c.errs.Addf(p.Field("type"), "%s is not supported by moe-host (STATIC and STRICT_DNS only)", cl.GetType())
	}
	// STATIC endpoints must be IP literals in Envoy; STRICT_DNS ones are resolved names.
	allowHostname := cl.GetType() == clusterv3.Cluster_STRICT_DNS
	la := cl.GetLoadAssignment()
	lp := p.Field("load_assignment")
	c.only(lp, la, "endpoints")
	for i, loc := range la.GetEndpoints() {
		locp := lp.Field("endpoints").Index(i)
		c.only(locp, loc, "lb_endpoints")
		for j, lbe := range loc.GetLbEndpoints() {
			lbp := locp.Field("lb_endpoints").Index(j)
			c.only(lbp, lbe, "endpoint")
			ep := lbe.GetEndpoint()
			if ep == nil {
				continue // endpoint_name was refused above
			}
			epp := lbp.Field("endpoint")
			c.only(epp, ep, "address")
			out.Endpoints = append(out.Endpoints, c.socketAddress(epp.Field("address"), ep.GetAddress(), allowHostname))
		}
	}
	return out, true
}
