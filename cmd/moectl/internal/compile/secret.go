package compile

import (
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// secret records a static generic secret so golang filters' generic_secrets can be resolved
// at compile time; moe-host has no SDS.
func (c *compiler) secret(p ypath.Path, s *tlsv3.Secret) {
	c.only(p, s, "name", "generic_secret")
	gs := s.GetGenericSecret()
	if gs == nil {
		return // other secret kinds were refused by only
	}
	if _, dup := c.secrets[s.GetName()]; dup {
		c.errs.Addf(p.Field("name"), "secret name %q is already used", s.GetName())
		return
	}
	gp := p.Field("generic_secret")
	c.only(gp, gs, "secret")
	ds := gs.GetSecret()
	c.only(gp.Field("secret"), ds, "inline_string", "inline_bytes")
	switch {
	case ds.GetInlineBytes() != nil:
		c.secrets[s.GetName()] = ds.GetInlineBytes()
	default:
		c.secrets[s.GetName()] = []byte(ds.GetInlineString())
	}
}
