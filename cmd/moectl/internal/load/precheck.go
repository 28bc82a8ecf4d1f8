package load

import (
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// precheck walks the decoded JSON tree alongside the proto descriptors and reports, with YAML
// paths, every key that names no field and every Any whose "@type" is not linked into moectl.
// It only looks for those two mistakes; everything else (wrong scalar types, oneof conflicts)
// is left to protojson, which stays the authority on decoding.
func precheck(md protoreflect.MessageDescriptor, tree any) error {
	var errs ypath.Errors
	checkMessage(&errs, ypath.Path{}, md, tree)
	return errs.Err()
}

// wellKnownJSON lists message types whose JSON form is not "an object of their fields".
var wellKnownJSON = map[protoreflect.FullName]bool{
	"google.protobuf.Duration": true, "google.protobuf.Timestamp": true,
	"google.protobuf.Struct": true, "google.protobuf.Value": true, "google.protobuf.ListValue": true,
	"google.protobuf.FieldMask": true, "google.protobuf.Empty": true,
	"google.protobuf.BoolValue": true, "google.protobuf.StringValue": true, "google.protobuf.BytesValue": true,
	"google.protobuf.Int32Value": true, "google.protobuf.Int64Value": true,
	"google.protobuf.UInt32Value": true, "google.protobuf.UInt64Value": true,
	"google.protobuf.FloatValue": true, "google.protobuf.DoubleValue": true,
}

func checkMessage(errs *ypath.Errors, p ypath.Path, md protoreflect.MessageDescriptor, v any) {
	if md.FullName() == "google.protobuf.Any" {
		checkAny(errs, p, v)
		return
	}
	if wellKnownJSON[md.FullName()] {
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return // null or a type mismatch; protojson reports the latter
	}
	checkFields(errs, p, md, obj)
}

func checkFields(errs *ypath.Errors, p ypath.Path, md protoreflect.MessageDescriptor, obj map[string]any) {
	for _, k := range sortedKeys(obj) {
		fp := p.Field(k)
		fd := md.Fields().ByJSONName(k)
		if fd == nil {
			fd = md.Fields().ByTextName(k)
		}
		if fd == nil {
			errs.Addf(fp, "unknown field %q in %s", k, md.FullName())
			continue
		}
		checkField(errs, fp, fd, obj[k])
	}
}

func checkField(errs *ypath.Errors, p ypath.Path, fd protoreflect.FieldDescriptor, v any) {
	switch {
	case fd.IsMap():
		vd := fd.MapValue()
		m, ok := v.(map[string]any)
		if !ok || vd.Message() == nil {
			return
		}
		for _, k := range sortedKeys(m) {
			checkMessage(errs, p.Key(k), vd.Message(), m[k])
		}
	case fd.Message() == nil:
		return
	case fd.IsList():
		list, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range list {
			checkMessage(errs, p.Index(i), fd.Message(), e)
		}
	default:
		checkMessage(errs, p, fd.Message(), v)
	}
}

func checkAny(errs *ypath.Errors, p ypath.Path, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	url, _ := obj["@type"].(string)
	if url == "" {
		errs.Addf(p, `"@type" is missing`)
		return
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
	if err != nil {
		errs.Addf(p.Field("@type"), "type %s is not supported by moe-host (unknown to moectl)", url)
		return
	}
	md := mt.Descriptor()
	if wellKnownJSON[md.FullName()] || md.FullName() == "google.protobuf.Any" {
		return // {"@type": ..., "value": ...}; protojson checks it
	}
	rest := make(map[string]any, len(obj)-1)
	for k, fv := range obj {
		if k != "@type" {
			rest[k] = fv
		}
	}
	checkFields(errs, p, md, rest)
}

// sortedKeys keeps error order stable from run to run.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
