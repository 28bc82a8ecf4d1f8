package api

import (
	"errors"
	"fmt"
)

// Errors a plugin gets when it touches a stream it does not own. Compare with
// errors.Is. They come wrapped in a *StreamError naming the operation.
var (
	// ErrReleased: the chain handed the stream back to Envoy (Continue or a local
	// reply) and no phase of this request is running now. Typically a goroutine that
	// kept a header map, buffer or handler after its phase ended.
	ErrReleased = errors.New("stream is not owned by the plugin chain (phase already handed back to Envoy)")
	// ErrDestroyed: Envoy ended the request (completed, reset or aborted by the client).
	ErrDestroyed = errors.New("request has ended")
	// ErrReadOnly: the object can no longer be changed, e.g. request headers after
	// they were forwarded upstream, or anything during the log phase.
	ErrReadOnly = errors.New("already forwarded, read only")
	// ErrUnavailable: the object does not exist in this phase (response headers
	// during the request path, a body the plugin did not declare it needs, ...).
	ErrUnavailable = errors.New("not available in this phase")
	// ErrAlreadyReplied: a second reply in the same phase, or a reply after the
	// response started.
	ErrAlreadyReplied = errors.New("a reply was already sent for this request")
)

// StreamError is the typed error (and panic value, for methods without an error
// result such as HeaderMap.Get) for stream access that is not allowed.
type StreamError struct {
	Op  string // e.g. "request headers Set"
	Err error  // one of the Err* values above
}

func (e *StreamError) Error() string { return fmt.Sprintf("moe: %s: %v", e.Op, e.Err) }
func (e *StreamError) Unwrap() error { return e.Err }

// IsStreamError reports whether a recovered panic value (or an error) is a
// *StreamError, i.e. a stray access that the framework refused.
func IsStreamError(v any) bool {
	if err, ok := v.(error); ok {
		var se *StreamError
		return errors.As(err, &se)
	}
	return false
}
