// Command libgolang is the main package of out/libgolang.so, the one library
// Envoy's golang filter loads:
//
//	go build -buildmode=c-shared -o out/libgolang.so ./cgo/libgolang
package main

import (
	_ "github.com/moeproxy/moe/plugins/all"
	_ "github.com/moeproxy/moe/shared/envoy"
)

func main() {}
