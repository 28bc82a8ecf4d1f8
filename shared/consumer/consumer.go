// Package consumer helps auth plugins define consumers in their config and
// find them per request without work: definitions are validated and indexed by
// credential when the config is parsed; a request costs one map lookup.
//
//	type Config struct {
//		Consumers []consumer.Def `json:"consumers"`
//		index     *consumer.Index[string]
//	}
//
//	func (c *Config) Init(api.ConfigEnv) error {
//		ix, err := consumer.Build(c.Consumers, "consumers", func(d consumer.Def) (string, error) {
//			return d.Credentials["key"], nil
//		})
//		c.index = ix
//		return err
//	}
//
//	// in OnReceive:
//	if cons, ok := f.cfg.index.Lookup(key); ok { ctx.SetConsumer(cons) }
package consumer

import (
	"fmt"

	"github.com/moeproxy/moe/shared/api"
)

// Def is a consumer as written in plugin config.
type Def struct {
	Name       string            `json:"name"`
	Group      string            `json:"group,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
	// Credentials are plugin specific (an API key, a password hash, a key id).
	Credentials map[string]string `json:"credentials,omitempty"`
}

// Consumer returns the api.Consumer of a definition (shared, immutable).
func (d Def) Consumer() *api.Consumer {
	return &api.Consumer{Name: d.Name, Group: d.Group, Attributes: d.Attributes}
}

// Index maps a credential of type K to its consumer.
type Index[K comparable] struct {
	byCred map[K]*api.Consumer
	byName map[string]*api.Consumer
}

// Build validates defs (non-empty unique names, unique credentials) and indexes
// them by the credential that key returns. field is the config path of the
// list, used in errors ("consumers[2].name: duplicate ...").
func Build[K comparable](defs []Def, field string, key func(Def) (K, error)) (*Index[K], error) {
	ix := &Index[K]{byCred: make(map[K]*api.Consumer, len(defs)), byName: make(map[string]*api.Consumer, len(defs))}
	for i, d := range defs {
		at := fmt.Sprintf("%s[%d]", field, i)
		if d.Name == "" {
			return nil, api.FieldErrorf(at+".name", "must not be empty")
		}
		if _, dup := ix.byName[d.Name]; dup {
			return nil, api.FieldErrorf(at+".name", "duplicate consumer %q", d.Name)
		}
		k, err := key(d)
		if err != nil {
			return nil, api.FieldErrorf(at+".credentials", "%v", err)
		}
		var zero K
		if k == zero {
			return nil, api.FieldErrorf(at+".credentials", "missing credential for consumer %q", d.Name)
		}
		if other, dup := ix.byCred[k]; dup {
			return nil, api.FieldErrorf(at+".credentials", "credential already used by consumer %q", other.Name)
		}
		c := d.Consumer()
		ix.byCred[k] = c
		ix.byName[d.Name] = c
	}
	return ix, nil
}

// Lookup finds the consumer of a credential.
func (ix *Index[K]) Lookup(cred K) (*api.Consumer, bool) {
	if ix == nil {
		return nil, false
	}
	c, ok := ix.byCred[cred]
	return c, ok
}

// ByName finds a consumer by name.
func (ix *Index[K]) ByName(name string) (*api.Consumer, bool) {
	if ix == nil {
		return nil, false
	}
	c, ok := ix.byName[name]
	return c, ok
}

// Len is the number of consumers.
func (ix *Index[K]) Len() int {
	if ix == nil {
		return 0
	}
	return len(ix.byName)
}
