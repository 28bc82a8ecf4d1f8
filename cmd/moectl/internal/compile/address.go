package compile

import (
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// socketAddress accepts a TCP socket_address with a numeric port. Listener, admin and STATIC
// endpoint addresses must be IP literals, as Envoy requires.
func (c *compiler) socketAddress(p ypath.Path, a *corev3.Address, allowHostname bool) bootstrap.SocketAddress {
	if a == nil {
		c.errs.Addf(p, "is required")
		return bootstrap.SocketAddress{}
	}
	c.only(p, a, "socket_address")
	sa := a.GetSocketAddress()
	if sa == nil {
		return bootstrap.SocketAddress{} // pipe / internal address refused by only
	}
	sp := p.Field("socket_address")
	c.only(sp, sa, "address", "port_value")
	if !allowHostname {
		if _, err := netip.ParseAddr(sa.GetAddress()); err != nil {
			c.errs.Addf(sp.Field("address"), "%q is not an IP address", sa.GetAddress())
		}
	}
	return bootstrap.SocketAddress{Address: sa.GetAddress(), Port: sa.GetPortValue()}
}
