package filtermanager

import (
	"testing"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"
)

// flakyMap is a header map whose Range panics halfway until told not to.
type flakyMap struct {
	envoy.HeaderMap // methods the test does not call
	fail            bool
}

func (m *flakyMap) Range(f func(k, v string) bool) {
	f("x-a", "1")
	if m.fail {
		panic("the map went away")
	}
	f("x-b", "2")
}

// A copy that fails halfway is no copy: the next read copies again instead of
// serving half the map.
func TestAFailedCopyLeavesNoCopy(t *testing.T) {
	env := &flakyMap{fail: true}
	h := &headerMap{s: &stream{}, env: env}
	func() {
		defer func() { _ = recover() }()
		h.loadLocked("Get")
	}()
	if h.st.pairs != nil {
		t.Fatalf("after a failed copy the map holds %q", h.st.pairs)
	}
	env.fail = false
	if v, ok := h.firstLocked("x-b"); !ok || v != "2" {
		t.Errorf("x-b after the copy succeeded: %q %v", v, ok)
	}
}

// A Range whose copy fails panics with the stream unlocked: Envoy's worker
// takes the lock next (OnDestroy, the panic handler).
func TestAFailedRangeLeavesTheStreamUnlocked(t *testing.T) {
	s := &stream{}
	s.dec.active = true
	h := &s.dec.headers
	h.s, h.env = s, &flakyMap{fail: true}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Range over a failing copy did not panic")
			}
		}()
		h.Range(func(string, string) bool { return true })
	}()
	if !s.mu.TryLock() {
		t.Fatal("the stream is still locked after a failed Range")
	}
	s.mu.Unlock()
}
