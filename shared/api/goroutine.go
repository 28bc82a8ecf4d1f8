package api

import (
	"runtime/debug"
)

// Go runs fn in a new goroutine for work that may outlive the current phase
// (fire-and-forget audit calls, fan-out). It recovers every panic: a
// *StreamError (the request ended or the phase was handed back) is logged at
// debug level, any other panic is logged with its stack. A bare `go` statement
// whose goroutine panics crashes Envoy, so always start plugin goroutines
// through Go.
func Go(ctx Context, fn func()) {
	go func() {
		defer func() {
			if r := recover(); r != nil {
				if IsStreamError(r) {
					ctx.Log().Debugf("goroutine stopped: %v", r)
					return
				}
				ctx.Log().Errorf("panic in plugin goroutine: %v\n%s", r, debug.Stack())
			}
		}()
		fn()
	}()
}
