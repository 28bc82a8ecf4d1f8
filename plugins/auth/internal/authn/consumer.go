package authn

import (
	"github.com/moeproxy/moe/shared/api"
)

// SetConsumer records the authenticated consumer for later plugins and, when
// header is not empty, forwards its name upstream in that header. A nil
// consumer removes the header so a client cannot spoof it.
func SetConsumer(ctx api.Context, h api.RequestHeaderMap, c *api.Consumer, header string) {
	if c != nil {
		ctx.SetConsumer(c)
	}
	if header == "" {
		return
	}
	if c == nil || !SafeHeaderValue(c.Name) {
		_ = h.Del(header)
		return
	}
	_ = h.Set(header, c.Name)
}
