package authn

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// RequiredConsumers is consumer.Collect for a credential plugin's Init: its
// own consumer list and the chain's, and at least one of them at filter level
// (a per-route config may list none and keep the parent's).
func RequiredConsumers[T, C any](env api.ConfigEnv, own []T, get func(*T) (*consumer.Spec, *C)) ([]consumer.Entry[C], error) {
	entries, err := consumer.Collect(env, "consumers", own, get)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 && !env.IsRoute() {
		return nil, api.FieldErrorf("consumers", "at least one consumer is required, in this list or as a chain-level consumer with auth.%s (a per-route config may omit them to keep the parent's)", env.PluginName())
	}
	return entries, nil
}
