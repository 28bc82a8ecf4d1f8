package all

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fuzzcheck"
)

// FuzzCheckChain: the moe filter's config (plugin list, consumers with their
// credentials and plugins, per-route lists) through config.CheckChain, with
// every plugin registered: no panic, errors naming plugin and field, no
// secret echoed. Seeds: every moe chain in the repository's YAML.
func FuzzCheckChain(f *testing.F) {
	fuzzcheck.Chain(f,
		`{"plugins":[{"name":"key-auth","config":{"sources":["header:x-api-key"]}},{"name":"limit-req","config":{"rate":1,"key":"$consumer"}}],"consumers":[{"name":"alice","auth":{"key-auth":{"keys":["alice-key-0123456789"]}},"plugins":[{"name":"limit-req","config":{"rate":5}}]}]}`,
		`{"plugins":[{"name":"key-auth","disabled":true},{"name":"basic-auth"}]}`,
	)
}
