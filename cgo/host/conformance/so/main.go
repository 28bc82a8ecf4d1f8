// Command so is the main package of out/libconformance.so, the plugin library the moe-host
// conformance suite loads:
//
//	make out/libconformance.so   # go build -buildmode=c-shared -ldflags=... ./cgo/host/conformance/so (build/cshared.mk)
package main

import (
	_ "github.com/moeproxy/moe/cgo/host/conformance/plugins"
)

func main() {}
