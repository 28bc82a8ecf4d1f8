// Command so is the library of the end-to-end tests:
//
//	go build -buildmode=c-shared -o out/libmoe-e2e.so ./shared/e2e/so
package main

import (
	_ "github.com/moeproxy/moe/shared/e2e/testplugins"
	_ "github.com/moeproxy/moe/shared/envoy"
)

func main() {}
