// Command libgolang is the main package of out/libgolang.so, the one library
// Envoy's golang filter loads:
//
//	make out/libgolang.so   # go build -buildmode=c-shared -ldflags=... ./cgo/libgolang (build/cshared.mk)
package main

import (
	_ "github.com/moeproxy/moe/plugins/all"
	_ "github.com/moeproxy/moe/shared/envoy"
)

func main() {}
