package envoyabi

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"
)

// The SDK's types this package reads (filter.go, type.go of
// contrib/golang/filters/http/source/go/pkg/http, v1.39.0):
//
//	type processState struct {
//		request      *httpRequest
//		processState *C.processState
//	}
//	type headerMapImpl struct {
//		state       *processState
//		headers     map[string][]string
//		headerNum   uint64
//		headerBytes uint64
//		mutex       sync.Mutex
//	}
//	type requestHeaderMapImpl struct{ requestOrResponseHeaderMapImpl{ headerMapImpl } }
//	(and responseHeaderMapImpl, requestTrailerMapImpl, responseTrailerMapImpl alike)
//	type httpRequest struct {
//		req   *C.httpRequest
//		...
//		mutex sync.Mutex
//		...
//	}
//
// Nothing is assumed about offsets: they are looked up by field name and type
// with reflect, once per type, and a type that does not have these fields is
// used through its methods.

const sdkPkg = "github.com/envoyproxy/envoy/contrib/golang/filters/http/source/go/pkg/http"

// mapTypes are the SDK's header and trailer map types; true for trailers.
var mapTypes = map[string]bool{
	"requestHeaderMapImpl":   false,
	"responseHeaderMapImpl":  false,
	"requestTrailerMapImpl":  true,
	"responseTrailerMapImpl": true,
}

// layout is where one SDK type keeps what this package reads: a map type its
// state and counts, the request type its C request and mutex.
type layout struct {
	typ               reflect.Type
	state, num, bytes uintptr // offsets in the map object
	cstate            uintptr // offset of the C processState* in the SDK's processState
	trailers          bool
	req, mu           uintptr // offsets in the request object
	err               error   // not the expected layout: use the object's methods
}

// layouts caches the verdict for the few map types a process sees (the SDK's
// four and a test's fakes): lock-free reads on every attach; a full cache only
// means recomputing. Global because types are; written once per type.
var layouts struct {
	mu    sync.Mutex
	n     atomic.Int32
	known [16]atomic.Pointer[layout]
}

func layoutOf(t reflect.Type) *layout {
	n := int(layouts.n.Load())
	for i := 0; i < n; i++ {
		if l := layouts.known[i].Load(); l.typ == t {
			return l
		}
	}
	var l *layout
	if t.Kind() == reflect.Pointer && t.Elem().Name() == "httpRequest" {
		l = inspectRequest(t, sdkPkg)
	} else {
		l = inspect(t, sdkPkg)
	}
	layouts.mu.Lock()
	defer layouts.mu.Unlock()
	if n := int(layouts.n.Load()); n < len(layouts.known) {
		layouts.known[n].Store(l)
		layouts.n.Store(int32(n + 1))
	}
	return l
}

// errNotSDK marks a type that is not one of the SDK's maps: nothing to report.
var errNotSDK = fmt.Errorf("not an Envoy Go SDK header map")

// inspect finds the layout of t, a map type of package pkg (the SDK's; tests
// pass their own).
func inspect(t reflect.Type, pkg string) *layout {
	l := &layout{typ: t}
	if !isStructOf(t, pkg) {
		l.err = errNotSDK
		return l
	}
	trailers, ok := mapTypes[t.Elem().Name()]
	if !ok {
		l.err = errNotSDK
		return l
	}
	l.trailers = trailers
	fail := func(err error) *layout {
		l.err = mismatch(t, err)
		return l
	}
	// The embedded chain down to headerMapImpl, each at some offset.
	s := t.Elem()
	var base uintptr
	for s.Name() != "headerMapImpl" {
		if s.NumField() == 0 || !s.Field(0).Anonymous || s.Field(0).Type.Kind() != reflect.Struct {
			return fail(fmt.Errorf("%s does not embed headerMapImpl", s))
		}
		base += s.Field(0).Offset
		s = s.Field(0).Type
	}
	st, err := field(s, "state", reflect.Pointer)
	if err != nil {
		return fail(err)
	}
	ps := st.Type.Elem()
	if ps.Kind() != reflect.Struct || ps.Name() != "processState" || ps.PkgPath() != pkg {
		return fail(fmt.Errorf("headerMapImpl.state is %s, not *processState", st.Type))
	}
	cs, err := field(ps, "processState", reflect.Pointer)
	if err != nil {
		return fail(err)
	}
	if !isCType(cs.Type.Elem()) {
		return fail(fmt.Errorf("processState.processState is %s, not *C.processState", cs.Type))
	}
	num, err := field(s, "headerNum", reflect.Uint64)
	if err != nil {
		return fail(err)
	}
	bytes, err := field(s, "headerBytes", reflect.Uint64)
	if err != nil {
		return fail(err)
	}
	l.state, l.num, l.bytes, l.cstate = base+st.Offset, base+num.Offset, base+bytes.Offset, cs.Offset
	return l
}

// inspectRequest finds the layout of t, the request type of package pkg.
func inspectRequest(t reflect.Type, pkg string) *layout {
	l := &layout{typ: t}
	if !isStructOf(t, pkg) || t.Elem().Name() != "httpRequest" {
		l.err = errNotSDK
		return l
	}
	s := t.Elem()
	req, err := field(s, "req", reflect.Pointer)
	if err == nil && !isCType(req.Type.Elem()) {
		err = fmt.Errorf("httpRequest.req is %s, not *C.httpRequest", req.Type)
	}
	var mu reflect.StructField
	if err == nil {
		if mu, err = field(s, "mutex", reflect.Struct); err == nil && mu.Type != reflect.TypeFor[sync.Mutex]() {
			err = fmt.Errorf("httpRequest.mutex is %s, not sync.Mutex", mu.Type)
		}
	}
	if err != nil {
		l.err = mismatch(t, err)
		return l
	}
	l.req, l.mu = req.Offset, mu.Offset
	return l
}

// isStructOf reports whether t is a pointer to a struct of package pkg.
func isStructOf(t reflect.Type, pkg string) bool {
	return t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && t.Elem().PkgPath() == pkg
}

// mismatch is the error for an SDK type that is not laid out as expected.
func mismatch(t reflect.Type, err error) error {
	return fmt.Errorf("envoyabi: %s: %w (moe was written against the v1.39.0 SDK)", t, err)
}

// isCType reports whether t is a type cgo made for a C type.
func isCType(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && strings.HasPrefix(t.Name(), "_Ctype_")
}

// field returns s's field name, which must be of kind k.
func field(s reflect.Type, name string, k reflect.Kind) (reflect.StructField, error) {
	f, ok := s.FieldByName(name)
	if !ok || len(f.Index) != 1 {
		return f, fmt.Errorf("%s has no field %s", s, name)
	}
	if f.Type.Kind() != k {
		return f, fmt.Errorf("%s.%s is a %s, not a %s", s, name, f.Type.Kind(), k)
	}
	return f, nil
}

// HeadersOf returns the C view of h when h is one of the SDK's header or
// trailer maps. The zero Headers (and no error) means h is something else,
// such as a test fake; an error means h is the SDK's but not laid out as this
// package expects. In both cases the caller uses h's own methods.
func HeadersOf(h envoy.HeaderMap) (Headers, error) {
	l, obj, err := sdkObject(h)
	if l == nil {
		return Headers{}, err
	}
	return l.headers(obj)
}

// headers reads the C view out of a map object of l's type.
func (l *layout) headers(obj unsafe.Pointer) (Headers, error) {
	ps := *(*unsafe.Pointer)(unsafe.Add(obj, l.state))
	if ps == nil {
		return Headers{}, errors.New("envoyabi: an SDK header map without a state")
	}
	return Headers{
		state:    *(*unsafe.Pointer)(unsafe.Add(ps, l.cstate)),
		num:      *(*uint64)(unsafe.Add(obj, l.num)),
		bytes:    *(*uint64)(unsafe.Add(obj, l.bytes)),
		trailers: l.trailers,
	}, nil
}

// RequestOf returns the C view of cb when cb is the SDK's request object (the
// callbacks the SDK hands the filter factory). The zero Request (and no
// error) means cb is something else, such as a test fake; an error means cb is
// the SDK's but not laid out as this package expects.
func RequestOf(cb envoy.FilterCallbackHandler) (Request, error) {
	l, obj, err := sdkObject(cb)
	if l == nil {
		return Request{}, err
	}
	if requestLayout.Load() != l {
		requestLayout.Store(l)
	}
	return Request{obj: obj}, nil
}

// sdkObject returns the layout of v's type and v's object when v is an SDK
// object this package reads; a nil layout otherwise, with an error when v is
// the SDK's but laid out differently.
func sdkObject(v any) (*layout, unsafe.Pointer, error) {
	if v == nil {
		return nil, nil, nil
	}
	switch l := layoutOf(reflect.TypeOf(v)); l.err {
	case nil:
		return l, reflect.ValueOf(v).UnsafePointer(), nil
	case errNotSDK:
		return nil, nil, nil
	default:
		return nil, nil, l.err
	}
}
