package envoyabi

/*
#include <stdint.h>

// From api.h (v1.39.0), as in envoyabi.go. Neither calls back into Go or keeps
// a pointer it was given. value_data is a uint64_t* there that Envoy fills
// with a char*: declared as the pointer it is.
#cgo noescape envoyGoFilterHttpGetStringValue
#cgo nocallback envoyGoFilterHttpGetStringValue
#cgo noescape envoyGoFilterHttpSetStringFilterState
#cgo nocallback envoyGoFilterHttpSetStringFilterState
int envoyGoFilterHttpGetStringValue(void* r, int id, void** value_data, int* value_len);
int envoyGoFilterHttpSetStringFilterState(void* r, void* key_data, int key_len, void* value_data,
                                          int value_len, int state_type, int life_span,
                                          int stream_sharing);
*/
import "C"

import (
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The ids of envoyGoFilterHttpGetStringValue (Envoy's EnvoyValue, also the
// SDK's Value* constants in capi_impl.go) that moe reads.
const (
	ValueRouteName               = 1
	ValueDownstreamLocalAddress  = 7
	ValueDownstreamRemoteAddress = 8
)

// valueNotFound is CAPIValueNotFound: the value does not exist (yet).
const valueNotFound = -5

// Request is the SDK's per-request object (the filter's callbacks) seen at
// the C ABI: it holds Envoy's httpRequest and the SDK's mutex that guards the
// string Envoy returns values in (req_->strValue, golang_filter.cc). One word,
// as moe keeps one per request in its stream; the zero value is no request.
type Request struct {
	obj unsafe.Pointer // the SDK's *httpRequest
}

// requestLayout is where the SDK's request type keeps the two, once
// RequestOf verified it (the SDK has one request type). Global because the
// type is; written before the first Request exists.
var requestLayout atomic.Pointer[layout]

// Valid reports whether r came from the SDK.
func (r Request) Valid() bool { return r.obj != nil }

func (r Request) parts() (req unsafe.Pointer, mu *sync.Mutex) {
	l := requestLayout.Load()
	return *(*unsafe.Pointer)(unsafe.Add(r.obj, l.req)), (*sync.Mutex)(unsafe.Add(r.obj, l.mu))
}

// StringValue reads one of Envoy's string values (Value*); ok is false when
// Envoy has none. It holds the SDK's mutex, as the SDK does: Envoy returns the
// value in one buffer per request, which another goroutine's read (through
// moe or the SDK) would overwrite.
func (r Request) StringValue(id int) (v string, ok bool, err error) {
	var data unsafe.Pointer
	var n C.int
	req, mu := r.parts()
	mu.Lock()
	defer mu.Unlock()
	rc := C.envoyGoFilterHttpGetStringValue(req, C.int(id), &data, &n)
	if rc == valueNotFound {
		return "", false, nil
	}
	if err := result(rc); err != nil {
		return "", false, err
	}
	return strings.Clone(unsafe.String((*byte)(data), int(n))), true, nil
}

// SetStringFilterState stores value under key in the stream's filter state
// (the SDK's FilterState().SetString, whose enums the ints are).
func (r Request) SetStringFilterState(key, value string, stateType, lifeSpan, streamSharing int) error {
	req, _ := r.parts()
	return result(C.envoyGoFilterHttpSetStringFilterState(req,
		unsafe.Pointer(unsafe.StringData(key)), C.int(len(key)),
		unsafe.Pointer(unsafe.StringData(value)), C.int(len(value)),
		C.int(stateType), C.int(lifeSpan), C.int(streamSharing)))
}
