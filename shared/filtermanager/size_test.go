package filtermanager

import (
	"testing"
	"unsafe"
)

// The stream and its plugins' slots are a request's one allocation; the GC's
// work grows with its size class. A field that pushes a common chain length
// into the next class costs every request.
func TestStreamFitsItsSizeClass(t *testing.T) {
	for _, tc := range []struct {
		what        string
		size, class uintptr
	}{
		{"one plugin", unsafe.Sizeof(streamWith[[1]slot]{}), 704},
		{"four plugins", unsafe.Sizeof(streamWith[[4]slot]{}), 896},
		{"eight plugins", unsafe.Sizeof(streamWith[[8]slot]{}), 1280},
	} {
		if tc.size > tc.class {
			t.Errorf("a stream with room for %s is %d bytes, over the %d-byte size class", tc.what, tc.size, tc.class)
		}
	}
}
