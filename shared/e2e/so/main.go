// Command so is the library of the end-to-end tests (out/libmoe-e2e.so, library_id moe-e2e):
// the framework's test plugins (./testplugins: panics in every phase, blocking phases, stray
// goroutines, counters on /e2e/stats) next to every shipped plugin, so that a test can run the
// shipped chains (the demo's, in the chaos suite) with plugins that misbehave on demand. The
// test plugins are never in out/libgolang.so (cgo/libgolang checks it).
//
//	make out/libmoe-e2e.so   # go build -buildmode=c-shared -ldflags=... ./shared/e2e/so (build/cshared.mk)
package main

import (
	_ "github.com/moeproxy/moe/plugins/all"
	_ "github.com/moeproxy/moe/shared/e2e/testplugins"
	_ "github.com/moeproxy/moe/shared/envoy"
)

func main() {}
