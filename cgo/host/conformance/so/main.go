// Command so is the main package of out/libconformance.so, the plugin library the moe-host
// conformance suite loads:
//
//	go build -buildmode=c-shared -o out/libconformance.so ./cgo/host/conformance/so
package main

import (
	_ "github.com/moeproxy/moe/cgo/host/conformance/plugins"
)

func main() {}
