# Link flags of every c-shared library (libgolang.so and the test libraries), included by the
# Makefile and read by build/Dockerfile.builder: one definition.
#
# cgocheck=0 becomes the library's default GODEBUG. With the default cgocheck=1 the Go runtime
# walks every Go pointer argument of a cgo call; the Envoy Go SDK passes one on each call (the
# header copy a slice of every header's strings), ~2.7k of the ~200k instructions of a request
# through the standard chain (make bench, B3). Envoy's golang filter was designed to run with
# GODEBUG=cgocheck=0 (envoyproxy/envoy#25222) and the setting cannot be given in source
# (//go:debug refuses it, golang/go#60426), hence the linker. moe's own cgo calls (cgo/envoyabi:
# header copies and writes) pass no Go pointer to Go pointers either. A GODEBUG in Envoy's
# environment still wins: GODEBUG=cgocheck=1 turns the check on
# again, and the tests start every moe-host with it (shared/testing/hosttest).
CSHARED_LDFLAGS := -X=runtime.godebugDefault=cgocheck=0
