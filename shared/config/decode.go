package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	udpatype "github.com/cncf/xds/go/udpa/type/v1"
	xdstype "github.com/cncf/xds/go/xds/type/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/moeproxy/moe/shared/api"
)

// AnyToJSON turns the golang filter's plugin_config into JSON. Accepted:
// xds.type.v3.TypedStruct and udpa.type.v1.TypedStruct (the usual form; the
// type_url inside is ignored), google.protobuf.Struct, and
// google.protobuf.StringValue holding JSON text. An absent config is "{}".
func AnyToJSON(a *anypb.Any) ([]byte, error) {
	if a == nil || (a.TypeUrl == "" && len(a.Value) == 0) {
		return []byte("{}"), nil
	}
	typeName := a.TypeUrl[strings.LastIndexByte(a.TypeUrl, '/')+1:]
	var st *structpb.Struct
	switch typeName {
	case "xds.type.v3.TypedStruct":
		var ts xdstype.TypedStruct
		if err := proto.Unmarshal(a.Value, &ts); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", typeName, err)
		}
		st = ts.Value
	case "udpa.type.v1.TypedStruct":
		var ts udpatype.TypedStruct
		if err := proto.Unmarshal(a.Value, &ts); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", typeName, err)
		}
		st = ts.Value
	case "google.protobuf.Struct":
		st = &structpb.Struct{}
		if err := proto.Unmarshal(a.Value, st); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", typeName, err)
		}
	case "google.protobuf.StringValue":
		var sv wrapperspb.StringValue
		if err := proto.Unmarshal(a.Value, &sv); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", typeName, err)
		}
		if strings.TrimSpace(sv.Value) == "" {
			return []byte("{}"), nil
		}
		return []byte(sv.Value), nil
	default:
		return nil, fmt.Errorf("unsupported plugin_config type %q (use xds.type.v3.TypedStruct)", a.TypeUrl)
	}
	if st == nil {
		return []byte("{}"), nil
	}
	return protojson.Marshal(st)
}

// TypedStruct wraps a JSON object into the Any Envoy would pass (for tests and
// tools).
func TypedStruct(jsonText string) (*anypb.Any, error) {
	st := &structpb.Struct{}
	if err := protojson.Unmarshal([]byte(jsonText), st); err != nil {
		return nil, err
	}
	return anypb.New(&xdstype.TypedStruct{Value: st})
}

// isEmpty reports whether raw is an absent config.
func isEmpty(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// DecodeStrict decodes raw JSON into dst (a pointer), refusing unknown fields
// and values of the wrong type. Errors are *api.FieldError naming the path.
func DecodeStrict(raw []byte, dst any) error {
	if isEmpty(raw) {
		return nil
	}
	var generic any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&generic); err != nil {
		return &api.FieldError{Reason: "malformed JSON: " + err.Error()}
	}
	// A key given twice would be seen once by the shape check (the last
	// value) and twice by the decode below: refuse it, naming it.
	if field, dup := duplicateKey(raw); dup {
		return &api.FieldError{Field: field, Reason: "given twice"}
	}
	// The shape check first, because it names unknown fields and type mismatches
	// with their full path (encoding/json does neither precisely).
	if err := check(generic, reflect.TypeOf(dst), ""); err != nil {
		return err
	}
	// Protobuf Struct numbers are doubles: "3.0" must still fill an int field.
	if normalizeNumbers(&generic) {
		if b, err := json.Marshal(generic); err == nil {
			raw = b
		}
	}
	d = json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &api.FieldError{Field: te.Field, Reason: fmt.Sprintf("cannot use %s as %s", te.Value, te.Type)}
		}
		return &api.FieldError{Reason: strings.TrimPrefix(err.Error(), "json: ")}
	}
	return nil
}

// keyName is an object key as it appears in a field path: as is when it is
// a plain name, quoted when it is empty or holds anything else (so that ""
// still names a field, and a key with a newline or a '.' cannot make the
// message say something else).
func keyName(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c == '-' || c == '/' || c == ':' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')) {
			return strconv.Quote(k)
		}
	}
	return k
}

// duplicateKey returns the path of the first object key that raw (valid
// JSON) gives twice in one object.
func duplicateKey(raw []byte) (string, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	field, err := dupWalk(d, "")
	return field, err == nil && field != ""
}

// dupWalk reads one value; for an object or a list it walks the elements.
func dupWalk(d *json.Decoder, path string) (string, error) {
	tok, err := d.Token()
	if err != nil {
		return "", err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return "", err
			}
			k, _ := kt.(string)
			at := joinPath(path, keyName(k))
			if seen[k] {
				return at, nil
			}
			seen[k] = true
			if field, err := dupWalk(d, at); field != "" || err != nil {
				return field, err
			}
		}
		_, err = d.Token()
	case json.Delim('['):
		for i := 0; d.More(); i++ {
			if field, err := dupWalk(d, path+"["+strconv.Itoa(i)+"]"); field != "" || err != nil {
				return field, err
			}
		}
		_, err = d.Token()
	}
	return "", err
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

func kindName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func mismatch(path string, want string, v any) error {
	return &api.FieldError{Field: path, Reason: fmt.Sprintf("expected %s, got %s", want, kindName(v))}
}

// check walks a generic JSON value against a Go type.
func check(v any, t reflect.Type, path string) error {
	if v == nil {
		return nil // null leaves the default
	}
	for t.Kind() == reflect.Pointer {
		if t.Implements(unmarshalerType) {
			return checkCustom(v, reflect.New(t.Elem()), path)
		}
		t = t.Elem()
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return checkCustom(v, reflect.New(t), path)
	}
	switch t.Kind() {
	case reflect.Interface:
		return nil
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return mismatch(path, "an object", v)
		}
		fields := map[string]reflect.Type{}
		collectFields(t, fields)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				names := make([]string, 0, len(fields))
				for n := range fields {
					names = append(names, n)
				}
				sort.Strings(names)
				return &api.FieldError{Field: joinPath(path, keyName(k)), Reason: fmt.Sprintf("unknown field (known: %s)", strings.Join(names, ", "))}
			}
			if err := check(obj[k], ft, joinPath(path, k)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return mismatch(path, "an object", v)
		}
		// In key order, so that the same config always fails on the same key.
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := check(obj[k], t.Elem(), joinPath(path, keyName(k))); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			if _, ok := v.(string); !ok {
				return mismatch(path, "a base64 string", v)
			}
			return nil
		}
		list, ok := v.([]any)
		if !ok {
			return mismatch(path, "a list", v)
		}
		for i, e := range list {
			if err := check(e, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return mismatch(path, "a string", v)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return mismatch(path, "a boolean", v)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return mismatch(path, "an integer", v)
		}
		if _, err := strconv.ParseInt(integral(n), 10, t.Bits()); err != nil {
			return &api.FieldError{Field: path, Reason: fmt.Sprintf("%s is not a valid %s", n, t.Kind())}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return mismatch(path, "a non-negative integer", v)
		}
		if _, err := strconv.ParseUint(integral(n), 10, t.Bits()); err != nil {
			return &api.FieldError{Field: path, Reason: fmt.Sprintf("%s is not a valid %s", n, t.Kind())}
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			return mismatch(path, "a number", v)
		}
	}
	return nil
}

// checkCustom runs a custom decoder (api.Duration, variables.Template, ...) on
// a scratch value, so that its error carries the field path: encoding/json
// returns an UnmarshalJSON error as is, without saying which field failed.
// The real decode then calls UnmarshalJSON again: custom decoders must be
// free of side effects (they are: they parse into the receiver).
func checkCustom(v any, target reflect.Value, path string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return &api.FieldError{Field: path, Reason: err.Error()}
	}
	if err := target.Interface().(json.Unmarshaler).UnmarshalJSON(b); err != nil {
		var fe *api.FieldError
		if errors.As(err, &fe) {
			return &api.FieldError{Field: joinPath(path, fe.Field), Reason: fe.Reason}
		}
		return &api.FieldError{Field: path, Reason: err.Error()}
	}
	return nil
}

// integral maps "3.0" or "3e0" (protobuf Struct numbers are doubles and come
// back as such) to "3", and leaves anything else as is so parsing fails.
func integral(n json.Number) string {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		return s
	}
	f, err := n.Float64()
	if err != nil || f != float64(int64(f)) {
		return s
	}
	return strconv.FormatInt(int64(f), 10)
}

func collectFields(t reflect.Type, out map[string]reflect.Type) {
	jsonFields(t, func(name string, f reflect.StructField) { out[name] = f.Type })
}

// jsonFields calls fn for every field of struct type t that encoding/json
// decodes, with its json name, in declaration order; fields of embedded
// structs without a json name are flattened into t, as JSON does.
func jsonFields(t reflect.Type, fn func(name string, f reflect.StructField)) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && !strings.HasPrefix(tag, "-,") {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonFields(ft, fn)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fn(name, f)
	}
}

// normalizeNumbers rewrites integral numbers written as floats ("3.0", "3e2")
// as integers; it reports whether it changed anything.
func normalizeNumbers(v *any) bool {
	changed := false
	switch x := (*v).(type) {
	case json.Number:
		if s := integral(x); s != string(x) {
			*v = json.Number(s)
			return true
		}
	case map[string]any:
		for k, e := range x {
			if normalizeNumbers(&e) {
				x[k] = e
				changed = true
			}
		}
	case []any:
		for i := range x {
			if normalizeNumbers(&x[i]) {
				changed = true
			}
		}
	}
	return changed
}
