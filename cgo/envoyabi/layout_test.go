package envoyabi

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// Look-alikes of the SDK's types (layout.go), in this package: inspect is
// given this package's path in place of the SDK's. The real SDK's maps are
// exercised through moe-host (shared/e2e, TestE2EHeaderCopyFollowsTheHostsMap),
// which fails when moe falls back to their methods.
type _Ctype_struct___3 struct{ req unsafe.Pointer }

type processState struct {
	request      unsafe.Pointer
	processState *_Ctype_struct___3
}

type headerMapImpl struct {
	state       *processState
	headers     map[string][]string
	headerNum   uint64
	headerBytes uint64
	mutex       sync.Mutex
}

type requestOrResponseHeaderMapImpl struct{ headerMapImpl }
type requestHeaderMapImpl struct {
	requestOrResponseHeaderMapImpl
}
type requestOrResponseTrailerMapImpl struct{ headerMapImpl }
type responseTrailerMapImpl struct {
	requestOrResponseTrailerMapImpl
}

// Layouts that are not the SDK's.
type requestTrailerMapImpl struct{ x int } // right name, no headerMapImpl
type responseHeaderMapImpl struct {        // counts of another type
	requestOrResponseTrailerMapImpl
}

var thisPkg = reflect.TypeOf(processState{}).PkgPath()

func TestInspectFindsStateAndCountsByName(t *testing.T) {
	c := &_Ctype_struct___3{}
	for _, tc := range []struct {
		obj      any
		trailers bool
	}{
		{&requestHeaderMapImpl{requestOrResponseHeaderMapImpl{headerMapImpl{state: &processState{processState: c}, headerNum: 9, headerBytes: 321}}}, false},
		{&responseTrailerMapImpl{requestOrResponseTrailerMapImpl{headerMapImpl{state: &processState{processState: c}, headerNum: 9, headerBytes: 321}}}, true},
	} {
		l := inspect(reflect.TypeOf(tc.obj), thisPkg)
		if l.err != nil {
			t.Fatalf("%T: %v", tc.obj, l.err)
		}
		h, err := l.headers(reflect.ValueOf(tc.obj).UnsafePointer())
		if err != nil {
			t.Fatal(err)
		}
		if h.state != unsafe.Pointer(c) || h.num != 9 || h.bytes != 321 || h.trailers != tc.trailers || !h.Valid() {
			t.Errorf("%T: got %+v", tc.obj, h)
		}
	}
}

func TestInspectRefusesOtherTypes(t *testing.T) {
	type otherMap struct{ headerMapImpl }
	for _, tc := range []struct {
		what string
		typ  reflect.Type
		want string // "" : not an SDK map at all
	}{
		{"a value, not a pointer", reflect.TypeOf(requestHeaderMapImpl{}), ""},
		{"an unknown name", reflect.TypeOf(&otherMap{}), ""},
		{"the SDK's name in another package", reflect.TypeOf(&requestHeaderMapImpl{}), "-"},
		{"no headerMapImpl inside", reflect.TypeOf(&requestTrailerMapImpl{}), "does not embed headerMapImpl"},
	} {
		pkg := thisPkg
		if tc.want == "-" {
			pkg, tc.want = sdkPkg, ""
		}
		l := inspect(tc.typ, pkg)
		switch {
		case tc.want == "" && l.err != errNotSDK:
			t.Errorf("%s: err %v, want not an SDK map", tc.what, l.err)
		case tc.want != "" && (l.err == nil || !strings.Contains(l.err.Error(), tc.want)):
			t.Errorf("%s: err %v, want one saying %q", tc.what, l.err, tc.want)
		}
	}
	// A map whose counts are where they should be still works when its
	// embedding is of another name: fields are found by name, not position.
	if l := inspect(reflect.TypeOf(&responseHeaderMapImpl{}), thisPkg); l.err != nil || l.trailers {
		t.Errorf("responseHeaderMapImpl: err %v trailers %v", l.err, l.trailers)
	}
}

func TestHeadersOfNilIsNoMap(t *testing.T) {
	if h, err := HeadersOf(nil); err != nil || h.Valid() {
		t.Errorf("nil: %+v %v", h, err)
	}
}

func TestStatusReadsAsTheSDKsPanic(t *testing.T) {
	for _, tc := range []struct {
		rc   int
		gone bool
		text string
	}{
		{-1, true, "request has been finished"},
		{-2, true, "golang filter has been destroyed"},
		{-3, false, "not proccessing Go"},
		{-4, false, "invalid phase, maybe headers/buffer already continued"},
		{-9, false, "invalid scene for this API"},
	} {
		s := Status(tc.rc)
		if s.Gone() != tc.gone || s.Error() != tc.text {
			t.Errorf("%d: gone %v %q", tc.rc, s.Gone(), s.Error())
		}
	}
}
