package limitreq

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// renderKey computes the bucket key of a request.
func (c *Config) renderKey(ctx api.Context) string {
	if c.clientIPKey {
		return hostOnly(ctx.Receiver().RequestInfo().DownstreamRemoteAddress())
	}
	return c.key.Render(ctx)
}

// hostOnly drops the port of Envoy's downstream address ("192.0.2.1:5555",
// "[2001:db8::1]:5555"). The framework's $remote_addr is that address with
// its port, so every connection would get its own bucket; nginx's
// $remote_addr, which users expect here, is the client IP. Slicing, no
// allocation.
func hostOnly(a string) string {
	if strings.HasPrefix(a, "[") {
		if i := strings.IndexByte(a, ']'); i > 0 {
			return a[1:i]
		}
		return a
	}
	if i := strings.LastIndexByte(a, ':'); i >= 0 && strings.IndexByte(a, ':') == i {
		return a[:i] // IPv4:port; a bare IPv6 address has several colons
	}
	return a
}
