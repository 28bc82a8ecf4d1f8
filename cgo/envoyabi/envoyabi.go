// Package envoyabi makes the golang filter's header and trailer calls, and its
// string stream-info reads and filter-state writes, into Envoy's C ABI itself,
// through the per-request state the Envoy Go SDK (v1.39.0, pinned in go.mod)
// already holds, instead of through the SDK's wrappers.
//
// Why by hand: the SDK's map copies every header into a Go map[string][]string
// on first use (HttpCopyHeaders: the map, its table, a one-element slice per
// header, the copy buffer and a 32-string array: ~13 allocations and ~1.6 KB
// for a request of nine headers), and every Set or Del makes that copy first.
// moe reads headers through its own header map (shared/filtermanager), which
// needs only the flat key/value pairs Envoy's copy writes. The C functions are
// the same ones the SDK calls (contrib/golang/common/go/api/api.h), with the
// same arguments and the same lifetime rules; only the Go side differs. For
// the same reason a string value (route name, client address) costs one
// allocation here, where the SDK's costs three, and a filter-state write none,
// where the SDK's allocates its FilterState wrapper.
//
// The SDK's types are unexported, so HeadersOf finds the C state in an SDK
// header map by the names, types and offsets reflect reports for the SDK's
// own types (layout.go). A map whose type is not the SDK's (a test fake) or
// whose layout differs from the one this package was written against is
// reported as such, and the caller uses the map's own methods.
package envoyabi

/*
#cgo linux LDFLAGS: -Wl,-unresolved-symbols=ignore-all
#cgo darwin LDFLAGS: -Wl,-undefined,dynamic_lookup
#include <stdint.h>

// None of these functions calls back into Go, and none keeps a pointer it was
// given after it returns (Envoy copies keys and values, or posts a copy to the
// worker thread). The copies are not noescape: Envoy writes pointers into the
// strings' buffer, which must live on the heap.
#cgo nocallback envoyGoFilterHttpCopyHeaders
#cgo nocallback envoyGoFilterHttpCopyTrailers
#cgo noescape envoyGoFilterHttpSetHeaderHelper
#cgo nocallback envoyGoFilterHttpSetHeaderHelper
#cgo noescape envoyGoFilterHttpRemoveHeader
#cgo nocallback envoyGoFilterHttpRemoveHeader
#cgo noescape envoyGoFilterHttpSetTrailer
#cgo nocallback envoyGoFilterHttpSetTrailer
#cgo noescape envoyGoFilterHttpRemoveTrailer
#cgo nocallback envoyGoFilterHttpRemoveTrailer

// From contrib/golang/common/go/api/api.h (v1.39.0): CAPIStatus is a C enum,
// headerAction a C enum (HeaderSet 0, HeaderAdd 1). Resolved against Envoy (or
// moe-host) when the library is loaded.
int envoyGoFilterHttpCopyHeaders(void* s, void* strs, void* buf);
int envoyGoFilterHttpSetHeaderHelper(void* s, void* key_data, int key_len, void* value_data,
                                     int value_len, int action);
int envoyGoFilterHttpRemoveHeader(void* s, void* key_data, int key_len);
int envoyGoFilterHttpCopyTrailers(void* s, void* strs, void* buf);
int envoyGoFilterHttpSetTrailer(void* s, void* key_data, int key_len, void* value, int value_len,
                                int action);
int envoyGoFilterHttpRemoveTrailer(void* s, void* key_data, int key_len);
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Headers is one SDK header or trailer map seen at the C ABI: the C
// processState of its direction and the size Envoy announced for the map
// when it handed it to Go. The zero value is no map.
type Headers struct {
	state      unsafe.Pointer // C processState*
	num, bytes uint64         // entries and key+value bytes at the entry call
	trailers   bool
}

// Valid reports whether h came from an SDK map.
func (h Headers) Valid() bool { return h.state != nil }

// spare is the room for new headers a copy leaves at the end of its pairs
// (two headers), so that the writes of a phase rarely move them.
const spare = 4

// Copy returns the map's entries as flat key, value pairs in Envoy's order
// (one C call; keys are lower case). The strings share one buffer.
//
// It is only correct while the map is as Envoy announced it: Envoy writes
// every entry its map has now into a buffer sized by the counts of the entry
// call (copyHeaderMapToGo, contrib/golang/filters/http/source/
// golang_filter.cc), with no bound. So copy before the first write through h,
// as the SDK does, and not after the headers left for the next filter, which
// may change them (shared/filtermanager: handBackLocked).
func (h Headers) Copy() ([]string, error) {
	n := int(h.num) * 2
	pairs := make([]string, n, n+spare)
	buf := make([]byte, h.bytes)
	strs, data := unsafe.Pointer(unsafe.SliceData(pairs)), unsafe.Pointer(unsafe.SliceData(buf))
	var rc C.int
	if h.trailers {
		rc = C.envoyGoFilterHttpCopyTrailers(h.state, strs, data)
	} else {
		rc = C.envoyGoFilterHttpCopyHeaders(h.state, strs, data)
	}
	// Envoy wrote pointers into buf where the GC cannot see the writes; buf
	// stays reachable from here until pairs holds them.
	runtime.KeepAlive(buf)
	if err := result(rc); err != nil {
		return nil, err
	}
	return pairs, nil
}

// Set replaces every value of key with value (add false) or adds a value.
// Called from a goroutine, Envoy applies it on its worker thread later, before
// the stream continues.
func (h Headers) Set(key, value string, add bool) error {
	act := C.int(0) // HeaderSet
	if add {
		act = 1 // HeaderAdd
	}
	k, v := unsafe.Pointer(unsafe.StringData(key)), unsafe.Pointer(unsafe.StringData(value))
	var rc C.int
	if h.trailers {
		rc = C.envoyGoFilterHttpSetTrailer(h.state, k, C.int(len(key)), v, C.int(len(value)), act)
	} else {
		rc = C.envoyGoFilterHttpSetHeaderHelper(h.state, k, C.int(len(key)), v, C.int(len(value)), act)
	}
	return result(rc)
}

// Remove deletes every value of key.
func (h Headers) Remove(key string) error {
	k := unsafe.Pointer(unsafe.StringData(key))
	var rc C.int
	if h.trailers {
		rc = C.envoyGoFilterHttpRemoveTrailer(h.state, k, C.int(len(key)))
	} else {
		rc = C.envoyGoFilterHttpRemoveHeader(h.state, k, C.int(len(key)))
	}
	return result(rc)
}
