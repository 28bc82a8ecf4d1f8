package authn

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// Options are the settings every credential plugin (basic-auth, key-auth,
// hmac-auth) shares. Embed it in a plugin config (no json name) so its fields
// sit at the top level of the plugin's config:
//
//	type Config struct {
//		authn.Options
//		...
//	}
type Options struct {
	// HideCredentials removes the credential (header, query parameter or
	// cookie) before the request goes upstream.
	HideCredentials bool `json:"hide_credentials"`
	// ConsumerHeader forwards the consumer name upstream in this header
	// (default "x-consumer-name"; "" turns it off). A value sent by the client
	// is always overwritten or removed, so it cannot be spoofed.
	ConsumerHeader string `json:"consumer_header"`
	// AnonymousConsumer, when set, lets requests without credentials through
	// as this consumer (wrong credentials are still refused). A route enables
	// anonymous access by setting it in its per-route config.
	AnonymousConsumer string `json:"anonymous_consumer"`
}

// DefaultOptions are the defaults a plugin's NewConfig starts from.
func DefaultOptions() Options { return Options{ConsumerHeader: "x-consumer-name"} }

// Validate checks the shared fields.
func (o *Options) Validate() error {
	if o.ConsumerHeader != "" && !api.ValidHeaderName(o.ConsumerHeader) {
		return api.FieldErrorf("consumer_header", "%q is not a valid header name", o.ConsumerHeader)
	}
	o.ConsumerHeader = strings.ToLower(o.ConsumerHeader)
	if o.AnonymousConsumer != "" {
		if err := consumer.CheckName(o.AnonymousConsumer); err != nil {
			return api.FieldErrorf("anonymous_consumer", "%v", err)
		}
	}
	return nil
}

// Anonymous returns the anonymous consumer, nil when anonymous access is off.
// Build it once at config time (Init).
func (o *Options) Anonymous() *api.Consumer {
	if o.AnonymousConsumer == "" {
		return nil
	}
	return consumer.NewAnonymous(o.AnonymousConsumer)
}
