package consumer

import "github.com/moeproxy/moe/shared/api"

// AnonymousAttribute marks a consumer let in without credentials (an auth
// plugin's anonymous_consumer). Later plugins (ACLs, limits) tell it apart with
// IsAnonymous.
const AnonymousAttribute = "moe.anonymous"

// NewAnonymous builds the consumer used for anonymous access.
func NewAnonymous(name string) *api.Consumer {
	return &api.Consumer{Name: name, Attributes: map[string]string{AnonymousAttribute: "true"}}
}

// IsAnonymous reports whether c was set for anonymous access.
func IsAnonymous(c *api.Consumer) bool {
	return c != nil && c.Attributes[AnonymousAttribute] == "true"
}

// Authenticated reports whether an earlier plugin (of this chain, or of an
// earlier golang filter: the consumer travels in Envoy's filter state) already
// authenticated a real, non-anonymous consumer. A plugin configured with an
// anonymous consumer then steps aside: several auth plugins, each with
// anonymous_consumer, accept a request that satisfies any one of them (Kong's
// "logical OR"). Without anonymous_consumer every plugin must pass (AND).
func Authenticated(ctx api.Context) bool {
	c := ctx.Consumer()
	return c != nil && !IsAnonymous(c)
}

// Identify records the authenticated consumer for later plugins and, when
// header is not empty, forwards its name upstream in that header. A nil
// consumer removes the header, so a client cannot spoof it.
func Identify(ctx api.Context, h api.RequestHeaderMap, c *api.Consumer, header string) {
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

// Forward sets header to the name of the consumer already established (or
// removes it when there is none or the name is not a safe header value). An
// auth plugin that steps aside (Authenticated) still owns its header and calls
// Forward: otherwise a client could send that header itself whenever the
// earlier plugin forwards the consumer under another name, or not at all.
func Forward(ctx api.Context, h api.RequestHeaderMap, header string) {
	if header == "" {
		return
	}
	if c := ctx.Consumer(); c != nil && SafeHeaderValue(c.Name) {
		_ = h.Set(header, c.Name)
		return
	}
	_ = h.Del(header)
}
