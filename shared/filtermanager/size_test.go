package filtermanager

import (
	"testing"
	"unsafe"
)

// The stream is a request's one allocation; the GC's work grows with its size
// class. Adding a field that crosses into the next class (1024 bytes) costs
// every request.
func TestStreamFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(stream{}); n > 896 {
		t.Errorf("stream is %d bytes, over the 896-byte size class", n)
	}
}
