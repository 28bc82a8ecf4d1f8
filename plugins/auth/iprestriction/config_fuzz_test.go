package iprestriction

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fuzzcheck"
)

// FuzzConfig: the plugin's config parser (strict decode, defaults, Validate)
// on any input: no panic, errors naming plugin and field, no secret echoed.
// Seeds: the plugin's configs in the repository and testdata/fuzz/FuzzConfig.
func FuzzConfig(f *testing.F) { fuzzcheck.PluginConfig(f, Name) }
