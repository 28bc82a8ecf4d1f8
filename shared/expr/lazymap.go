package expr

import (
	"net/url"
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// lazyMap is a CEL map(string, string) that answers lookups ("k" in m,
// m["k"], m[?"k"]) through get, without building the map; only iteration,
// size, equality and conversion build it (all), once. Written by hand
// because cel-go's maps are built from a complete Go map, and copying every
// header for each evaluation would cost more than the expression.
type lazyMap struct {
	get  func(key string) (string, bool)
	all  func() map[string]string
	full traits.Mapper
}

var _ traits.Mapper = (*lazyMap)(nil)

func newLazyMap(get func(string) (string, bool), all func() map[string]string) *lazyMap {
	return &lazyMap{get: get, all: all}
}

func (m *lazyMap) materialize() traits.Mapper {
	if m.full == nil {
		m.full = types.NewStringStringMap(types.DefaultTypeAdapter, m.all())
	}
	return m.full
}

func (m *lazyMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(key), false
	}
	v, found := m.get(string(k))
	if !found {
		return nil, false
	}
	return types.String(v), true
}

func (m *lazyMap) Get(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if !found {
		if v != nil {
			return v
		}
		return types.NewErr("no such key: %v", key)
	}
	return v
}

func (m *lazyMap) Contains(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if !found && v != nil {
		return v // an error
	}
	return types.Bool(found)
}

func (m *lazyMap) Iterator() traits.Iterator { return m.materialize().Iterator() }
func (m *lazyMap) Size() ref.Val             { return m.materialize().Size() }
func (m *lazyMap) ConvertToNative(t reflect.Type) (any, error) {
	return m.materialize().ConvertToNative(t)
}
func (m *lazyMap) ConvertToType(t ref.Type) ref.Val { return m.materialize().ConvertToType(t) }
func (m *lazyMap) Equal(other ref.Val) ref.Val      { return m.materialize().Equal(other) }
func (m *lazyMap) Type() ref.Type                   { return types.MapType }
func (m *lazyMap) Value() any                       { return m.materialize().Value() }

func decodeQueryComponent(s string) (string, error) { return url.QueryUnescape(s) }
