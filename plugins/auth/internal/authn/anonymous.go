package authn

import "github.com/moeproxy/moe/shared/api"

// AnonymousAttribute marks a consumer that was let in without credentials
// (Options.AnonymousConsumer). Later plugins (ACLs, limits) can tell it apart
// with IsAnonymous.
const AnonymousAttribute = "moe.anonymous"

// NewAnonymous builds the consumer used for anonymous access.
func NewAnonymous(name string) *api.Consumer {
	return &api.Consumer{Name: name, Attributes: map[string]string{AnonymousAttribute: "true"}}
}

// IsAnonymous reports whether c was set for anonymous access.
func IsAnonymous(c *api.Consumer) bool {
	return c != nil && c.Attributes[AnonymousAttribute] == "true"
}

// AlreadyAuthenticated reports whether an earlier plugin of the chain already
// authenticated a real (non-anonymous) consumer. A plugin configured with an
// anonymous consumer then steps aside: several credential plugins, each with
// anonymous_consumer, accept a request that satisfies any one of them (Kong's
// "logical OR" set-up). Without anonymous_consumer every plugin must pass (AND).
func AlreadyAuthenticated(ctx api.Context) bool {
	c := ctx.Consumer()
	return c != nil && !IsAnonymous(c)
}
