package filtermanager

import (
	"testing"
	"unsafe"
)

// The stream and its plugins' slots are a request's one allocation; the GC's
// work grows with its size class. A field that pushes a common chain length
// into the next class costs every request. An object over 512 bytes that holds
// pointers carries an 8-byte header in its slot (Go 1.22+, mallocHeaderSize in
// runtime/mbitmap.go), so that is what must fit.
func TestStreamFitsItsSizeClass(t *testing.T) {
	const header = 8
	for _, tc := range []struct {
		what        string
		size, class uintptr
	}{
		{"one plugin", unsafe.Sizeof(streamWith[[1]slot]{}), 480},
		{"four plugins", unsafe.Sizeof(streamWith[[4]slot]{}), 704},
		{"six plugins", unsafe.Sizeof(streamWith[[6]slot]{}), 896},
		{"eight plugins", unsafe.Sizeof(streamWith[[8]slot]{}), 1024},
		{"twelve plugins", unsafe.Sizeof(streamWith[[12]slot]{}), 1280},
		{"sixteen plugins", unsafe.Sizeof(streamWith[[16]slot]{}), 1792},
		// Chains whose plugins see bodies hold both sides' bodies.
		{"one plugin and bodies", unsafe.Sizeof(streamBodiesWith[[1]slot]{}), 640},
		{"four plugins and bodies", unsafe.Sizeof(streamBodiesWith[[4]slot]{}), 896},
		{"six plugins and bodies", unsafe.Sizeof(streamBodiesWith[[6]slot]{}), 1024},
		{"eight plugins and bodies", unsafe.Sizeof(streamBodiesWith[[8]slot]{}), 1152},
		{"twelve plugins and bodies", unsafe.Sizeof(streamBodiesWith[[12]slot]{}), 1408},
		{"sixteen plugins and bodies", unsafe.Sizeof(streamBodiesWith[[16]slot]{}), 1792},
	} {
		if tc.size+header > tc.class {
			t.Errorf("a stream with room for %s is %d bytes and its header %d, over the %d-byte size class", tc.what, tc.size, header, tc.class)
		}
	}
}
