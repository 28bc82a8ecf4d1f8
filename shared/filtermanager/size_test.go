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
		{"one plugin", unsafe.Sizeof(streamWith[[1]slot]{}), 640},
		{"four plugins", unsafe.Sizeof(streamWith[[4]slot]{}), 896},
		{"six plugins", unsafe.Sizeof(streamWith[[6]slot]{}), 1024},
		{"eight plugins", unsafe.Sizeof(streamWith[[8]slot]{}), 1152},
		{"twelve plugins", unsafe.Sizeof(streamWith[[12]slot]{}), 1536},
		{"sixteen plugins", unsafe.Sizeof(streamWith[[16]slot]{}), 1792},
	} {
		if tc.size > tc.class {
			t.Errorf("a stream with room for %s is %d bytes, over the %d-byte size class", tc.what, tc.size, tc.class)
		}
	}
}
