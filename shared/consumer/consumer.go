// Package consumer is moe's one consumer model: how a consumer (the
// authenticated caller) is defined in config, checked, indexed by auth
// plugins and marked anonymous.
//
// Consumers are defined in two places, and auth plugins read both:
//
//   - once for the whole chain, in the moe config next to `plugins:`, with a
//     credential per auth plugin and, optionally, plugins of their own:
//
//     consumers:
//
//   - name: alice
//     group: admins
//     auth: {key-auth: {keys: [alice-key]}, jwt-auth: {claim_value: alice}}
//     plugins: [{name: limit-req, config: {rate: 100}}]
//
//   - in an auth plugin's own `consumers:` list (a Spec plus the credential
//     fields), as before.
//
// An auth plugin registers its credential type (registry.Plugin.NewCredential),
// embeds Spec next to the same credential type in its own consumer entries,
// and indexes both lists in Init with Collect:
//
//	type Credential struct{ Keys []string `json:"keys"` }
//	type Consumer struct {
//		consumer.Spec
//		Credential
//	}
//	entries, err := consumer.Collect(env, "consumers", c.Consumers,
//		func(x *Consumer) (*consumer.Spec, *Credential) { return &x.Spec, &x.Credential })
//
// Per request the plugin finds the consumer with one lookup and calls
// Identify (or ctx.SetConsumer).
package consumer

import (
	"fmt"
	"unicode/utf8"

	"github.com/moeproxy/moe/shared/api"
)

// Spec is how config names a consumer. Embed it (no json name) in a plugin's
// consumer entries next to the credentials:
//
//	consumers: [{name: alice, group: admins, attributes: {tier: gold}, keys: [...]}]
type Spec struct {
	// Name identifies the consumer: $consumer, the forwarded consumer header,
	// consumer-restriction rules and the per-consumer plugins all use it.
	Name string `json:"name"`
	// Group is a free-form group (consumer-restriction and $consumer_group).
	Group string `json:"group"`
	// Attributes are free-form labels for later plugins (ctx.Consumer()).
	Attributes map[string]string `json:"attributes"`
}

// Check validates the spec; field is its path ("consumers[2]") for errors.
func (s *Spec) Check(field string) error {
	if err := CheckName(s.Name); err != nil {
		return api.FieldErrorf(field+".name", "%v", err)
	}
	if !SafeHeaderValue(s.Group) {
		return api.FieldErrorf(field+".group", "contains control characters")
	}
	for k, v := range s.Attributes {
		if k == AnonymousAttribute {
			return api.FieldErrorf(field+".attributes."+k, "reserved attribute name")
		}
		if !SafeHeaderValue(v) {
			return api.FieldErrorf(field+".attributes."+k, "contains control characters")
		}
	}
	return nil
}

// Consumer builds the immutable *api.Consumer handed to ctx.SetConsumer.
func (s *Spec) Consumer() *api.Consumer {
	c := &api.Consumer{Name: s.Name, Group: s.Group}
	if len(s.Attributes) > 0 {
		c.Attributes = make(map[string]string, len(s.Attributes))
		for k, v := range s.Attributes {
			c.Attributes[k] = v
		}
	}
	return c
}

// CheckName checks a consumer name: names travel upstream in a header and
// into logs, so they must be printable, valid UTF-8 and short.
func CheckName(n string) error {
	switch {
	case n == "":
		return fmt.Errorf("must not be empty")
	case len(n) > 256:
		return fmt.Errorf("longer than 256 bytes")
	case !utf8.ValidString(n):
		return fmt.Errorf("not valid UTF-8")
	case !SafeHeaderValue(n):
		return fmt.Errorf("contains control characters")
	}
	return nil
}

// SafeHeaderValue reports whether v can be sent as a header value as is: no
// CR, LF, NUL or other control characters (tab allowed), so a value taken from
// a credential, a token claim or config cannot inject headers.
func SafeHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// Names checks that consumer names are unique: create one per list
// (consumer.Names{}) and Add every entry.
type Names map[string]string

// Add checks s with Check and that no earlier entry has the same name; field
// is the entry's path ("consumers[i]").
func (n Names) Add(field string, s *Spec) error {
	if err := s.Check(field); err != nil {
		return err
	}
	if other, dup := n[s.Name]; dup {
		return api.FieldErrorf(field+".name", "consumer %q is also %s", s.Name, other)
	}
	n[s.Name] = field
	return nil
}
