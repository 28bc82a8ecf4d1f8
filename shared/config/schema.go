package config

import (
	"encoding/json"
	"reflect"
	"strings"
)

// Schema is a JSON Schema (draft 2020-12) of a plugin config type, derived
// from the Go type the decoder decodes into, so it accepts what the decoder
// accepts structurally (fields, types, no unknown fields); value checks
// (ranges, formats) stay the plugin's Validate. docs maps a field path (as in
// Fields: "rules[].key") to its description; defaults come from the config
// NewConfig returns.
func Schema(v any, docs map[string]string) map[string]any {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s := schemaOf(t, "", docs)
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	applyValueDefaults(s, reflect.ValueOf(v))
	return s
}

func schemaOf(t reflect.Type, path string, docs map[string]string) map[string]any {
	s := map[string]any{}
	if d, ok := docs[path]; ok && d != "" {
		s["description"] = d
	}
	if t == rawMessageType {
		return s // any JSON
	}
	switch name := typeName(t); name {
	case "duration":
		s["type"] = []string{"string", "number"}
		s["pattern"] = `^[0-9.]+(ns|us|µs|ms|s|m|h)+$`
		return s
	case "variable", "template", "cel":
		s["type"] = "string"
		s["x-moe-type"] = name
		return s
	case "match":
		s["type"] = "object"
		s["x-moe-type"] = "match"
		return s
	}
	if leaf(t) {
		// A type with its own decoder (a size like "1k"): what it accepts is
		// its decoder's business, not the Go kind's.
		s["x-moe-type"] = typeName(t)
		return s
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		s["type"] = "string"
	case reflect.Bool:
		s["type"] = "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s["type"] = "integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s["type"] = "integer"
		s["minimum"] = 0
	case reflect.Float32, reflect.Float64:
		s["type"] = "number"
	case reflect.Slice, reflect.Array:
		s["type"] = "array"
		s["items"] = schemaOf(t.Elem(), path+"[]", docs)
	case reflect.Map:
		s["type"] = "object"
		s["additionalProperties"] = schemaOf(t.Elem(), path+".*", docs)
	case reflect.Struct:
		s["type"] = "object"
		props := map[string]any{}
		prefix := path
		if prefix != "" {
			prefix += "."
		}
		jsonFields(t, func(name string, f reflect.StructField) {
			props[name] = schemaOf(f.Type, prefix+name, docs)
		})
		s["properties"] = props
		s["additionalProperties"] = false
	}
	return s
}

// applyValueDefaults writes the non-zero fields of the default config v into
// the schema's properties (nested objects recursively).
func applyValueDefaults(s map[string]any, v reflect.Value) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	props, _ := s["properties"].(map[string]any)
	jsonFieldValues(v, func(name string, fv reflect.Value) {
		p, ok := props[name].(map[string]any)
		if !ok || fv.IsZero() {
			return
		}
		if p["properties"] != nil && fv.Kind() != reflect.Pointer {
			applyValueDefaults(p, fv)
			return
		}
		b, err := json.Marshal(fv.Interface())
		if err != nil {
			return
		}
		var d any
		if json.Unmarshal(b, &d) == nil {
			p["default"] = d
		}
	})
}

// jsonFieldValues is jsonFields over a struct value.
func jsonFieldValues(v reflect.Value, fn func(name string, fv reflect.Value)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			fv := v.Field(i)
			for fv.Kind() == reflect.Pointer && !fv.IsNil() {
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct {
				jsonFieldValues(fv, fn)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fn(name, v.Field(i))
	}
}
