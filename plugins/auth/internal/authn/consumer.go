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

// StepAside is what a plugin with anonymous access does when an earlier
// plugin of the chain already authenticated the caller (AlreadyAuthenticated):
// it lets the request through but still owns its consumer header, which it
// sets to the consumer already established. Otherwise a client could send
// that header itself whenever the earlier plugin forwards the consumer under
// another name (or not at all).
func StepAside(ctx api.Context, h api.RequestHeaderMap, header string) {
	if header == "" {
		return
	}
	if c := ctx.Consumer(); c != nil && SafeHeaderValue(c.Name) {
		_ = h.Set(header, c.Name)
		return
	}
	_ = h.Del(header)
}
