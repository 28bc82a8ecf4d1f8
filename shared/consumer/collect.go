package consumer

import (
	"fmt"

	"github.com/moeproxy/moe/shared/api"
)

// Entry is one consumer with its credential for a plugin, from the plugin's
// own consumer list or from the chain's.
type Entry[C any] struct {
	Consumer   *api.Consumer
	Credential *C
	// Field is the entry's config path for errors: "consumers[1]" in the
	// plugin's own list, "consumers[3].auth.key-auth" in the chain's (the
	// moe config's), so a message says which list to fix.
	Field string
}

// Collect returns a plugin's consumers: its own list first (field is its
// config path, get returns an entry's Spec and credential), then the
// chain-level consumers with a credential for the plugin (env.Consumers). Own
// entries are checked with Spec.Check; a name may appear once across both
// lists. Chain credentials must be of type *C (the plugin's registered
// NewCredential).
func Collect[T, C any](env api.ConfigEnv, field string, own []T, get func(*T) (*Spec, *C)) ([]Entry[C], error) {
	chain := env.Consumers()
	out := make([]Entry[C], 0, len(own)+len(chain))
	names := Names{}
	for i := range own {
		spec, cred := get(&own[i])
		at := fmt.Sprintf("%s[%d]", field, i)
		if err := names.Add(at, spec); err != nil {
			return nil, err
		}
		out = append(out, Entry[C]{Consumer: spec.Consumer(), Credential: cred, Field: at})
	}
	for _, cc := range chain {
		if other, dup := names[cc.Consumer.Name]; dup {
			return nil, api.FieldErrorf(other+".name", "consumer %q is also defined in the chain's consumers (%s); define it once", cc.Consumer.Name, cc.Field)
		}
		cred, ok := cc.Credential.(*C)
		if !ok {
			return nil, fmt.Errorf("%s: credential of type %T, want %T", cc.Field, cc.Credential, (*C)(nil))
		}
		names[cc.Consumer.Name] = cc.Field
		out = append(out, Entry[C]{Consumer: cc.Consumer, Credential: cred, Field: cc.Field})
	}
	return out, nil
}
