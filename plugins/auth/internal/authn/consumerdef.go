package authn

import (
	"fmt"
	"unicode/utf8"

	"github.com/moeproxy/moe/shared/api"
)

// ConsumerSpec is how a credential plugin's config names the consumer a
// credential belongs to. Embed it (no json name) in the plugin's consumer
// entries next to the credentials:
//
//	consumers: [{name: alice, group: admins, attributes: {tier: gold}, keys: [...]}]
type ConsumerSpec struct {
	Name       string            `json:"name"`
	Group      string            `json:"group"`
	Attributes map[string]string `json:"attributes"`
}

// Check validates the spec; field is its path ("consumers[2]") for errors.
func (s *ConsumerSpec) Check(field string) error {
	if err := checkConsumerName(s.Name); err != nil {
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
func (s *ConsumerSpec) Consumer() *api.Consumer {
	c := &api.Consumer{Name: s.Name, Group: s.Group}
	if len(s.Attributes) > 0 {
		c.Attributes = make(map[string]string, len(s.Attributes))
		for k, v := range s.Attributes {
			c.Attributes[k] = v
		}
	}
	return c
}

// checkConsumerName: consumer names travel upstream in a header and into
// logs, so they must be printable, valid UTF-8 and short.
func checkConsumerName(n string) error {
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

// ConsumerNames checks a config's consumer entries in order and that their names are unique:
// create one per config (authn.ConsumerNames{}) and call Add for every entry.
type ConsumerNames map[string]int

// Add checks consumers[i] (field is its path, "consumers[i]") with Check and that no earlier
// entry has the same name.
func (n ConsumerNames) Add(i int, field string, s *ConsumerSpec) error {
	if err := s.Check(field); err != nil {
		return err
	}
	if j, dup := n[s.Name]; dup {
		return api.FieldErrorf(field+".name", "consumer %q is also consumers[%d]", s.Name, j)
	}
	n[s.Name] = i
	return nil
}
