package config

import (
	"encoding/json"
	"reflect"
)

// FieldInfo describes one config field as users write it in YAML.
type FieldInfo struct {
	// Path is the field's path: "a", "a.b" for a field of an object, "a[].b"
	// for a field of a list's objects, "a.*.b" for a field of a map's objects.
	Path string
	// Type is the field's type in the docs' vocabulary: string, bool, int,
	// number, duration, variable, template, object, []T, map[string]T, any, or
	// what a type's ConfigType method says.
	Type string
}

// Fields lists the config fields of v (a config struct or a pointer to one)
// in declaration order, nested fields after their parent, with the json names
// the decoder uses (fields of embedded structs are flattened, as in JSON).
// Generated docs, schemas and the README check read it.
func Fields(v any) []FieldInfo {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []FieldInfo
	structFields(t, "", &out)
	return out
}

var (
	rawMessageType = reflect.TypeOf(json.RawMessage(nil))
	configTyper    = reflect.TypeOf((*interface{ ConfigType() string })(nil)).Elem()
)

func structFields(t reflect.Type, prefix string, out *[]FieldInfo) {
	jsonFields(t, func(name string, f reflect.StructField) {
		path := prefix + name
		*out = append(*out, FieldInfo{Path: path, Type: typeName(f.Type)})
		nested(f.Type, path, out)
	})
}

// nested adds the fields of objects inside t (directly, in a list, in a map).
func nested(t reflect.Type, path string, out *[]FieldInfo) {
	if leaf(t) {
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		nested(t.Elem(), path, out)
	case reflect.Struct:
		structFields(t, path+".", out)
	case reflect.Slice, reflect.Array:
		nested(t.Elem(), path+"[]", out)
	case reflect.Map:
		nested(t.Elem(), path+".*", out)
	}
}

// leaf: types decoded as a whole (custom decoders, raw JSON) have no fields.
func leaf(t reflect.Type) bool {
	return t == rawMessageType || t.Implements(configTyper) || reflect.PointerTo(t).Implements(configTyper) ||
		t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

func typeName(t reflect.Type) string {
	if t == rawMessageType {
		return "any"
	}
	for _, c := range []reflect.Type{t, reflect.PointerTo(t)} {
		if c.Implements(configTyper) {
			return reflect.Zero(c).Interface().(interface{ ConfigType() string }).ConfigType()
		}
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		// A custom decoder must say what users write (ConfigType).
		return "custom(" + t.String() + ")"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Struct:
		return "object"
	case reflect.Slice, reflect.Array:
		return "[]" + typeName(t.Elem())
	case reflect.Map:
		return "map[string]" + typeName(t.Elem())
	case reflect.Interface:
		return "any"
	}
	return t.String()
}
