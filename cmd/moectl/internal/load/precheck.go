package load

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// precheck walks the decoded JSON tree alongside the proto descriptors and reports, with YAML
// paths, what protojson would refuse: keys that name no field, a field given twice (by its
// proto and its JSON name), two members of one oneof, values of the wrong JSON type, integers
// out of range, unknown enum names, malformed durations, timestamps and base64, and Anys
// whose "@type" is missing or not known. protojson stays the authority on decoding (it runs
// afterwards); this pass exists because protojson's own messages give a byte offset into the
// converted JSON, which means nothing to the user.
func (d *Decoder) precheck(errs *ypath.Errors, p ypath.Path, md protoreflect.MessageDescriptor, tree any) {
	d.checkMessage(errs, p, md, tree)
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

func (d *Decoder) checkMessage(errs *ypath.Errors, p ypath.Path, md protoreflect.MessageDescriptor, v any) {
	if v == nil {
		return // null leaves a message unset
	}
	name := md.FullName()
	switch {
	case name == "google.protobuf.Any":
		d.checkAny(errs, p, v)
		return
	case wellKnownJSON[name]:
		d.checkWellKnown(errs, p, md, v)
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		errs.Addf(p, "want an object (%s), got %s", name, describe(v))
		return
	}
	d.checkFields(errs, p, md, obj)
}

func (d *Decoder) checkFields(errs *ypath.Errors, p ypath.Path, md protoreflect.MessageDescriptor, obj map[string]any) {
	seen := map[protoreflect.Name]string{}
	oneofs := map[protoreflect.FullName]string{}
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
		if other, dup := seen[fd.Name()]; dup {
			errs.Addf(fp, "field %s is also set as %q", fd.Name(), other)
			continue
		}
		seen[fd.Name()] = k
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && obj[k] != nil {
			if other, set := oneofs[od.FullName()]; set {
				errs.Addf(fp, "only one of the oneof %s may be set (also %q)", od.Name(), other)
				continue
			}
			oneofs[od.FullName()] = k
		}
		d.checkField(errs, fp, fd, obj[k])
	}
}

func (d *Decoder) checkField(errs *ypath.Errors, p ypath.Path, fd protoreflect.FieldDescriptor, v any) {
	if v == nil {
		return
	}
	switch {
	case fd.IsMap():
		m, ok := v.(map[string]any)
		if !ok {
			errs.Addf(p, "want an object (map), got %s", describe(v))
			return
		}
		kd, vd := fd.MapKey(), fd.MapValue()
		for _, k := range sortedKeys(m) {
			kp := p.Key(k)
			if msg := checkMapKey(kd, k); msg != "" {
				errs.Addf(kp, "%s", msg)
				continue
			}
			d.checkSingular(errs, kp, vd, m[k])
		}
	case fd.IsList():
		list, ok := v.([]any)
		if !ok {
			errs.Addf(p, "want a list, got %s", describe(v))
			return
		}
		for i, e := range list {
			if e == nil && !(fd.Message() != nil && fd.Message().FullName() == "google.protobuf.Value") {
				errs.Addf(p.Index(i), "null is not allowed in a list")
				continue
			}
			d.checkSingular(errs, p.Index(i), fd, e)
		}
	default:
		d.checkSingular(errs, p, fd, v)
	}
}

// checkSingular checks one value of the field's element type.
func (d *Decoder) checkSingular(errs *ypath.Errors, p ypath.Path, fd protoreflect.FieldDescriptor, v any) {
	if v == nil {
		return
	}
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		d.checkMessage(errs, p, fd.Message(), v)
		return
	}
	if msg := checkScalar(fd, v); msg != "" {
		errs.Addf(p, "%s", msg)
	}
}

func checkMapKey(kd protoreflect.FieldDescriptor, k string) string {
	switch kd.Kind() {
	case protoreflect.StringKind:
		return ""
	case protoreflect.BoolKind:
		if k != "true" && k != "false" {
			return fmt.Sprintf("map key %q: want true or false", k)
		}
		return ""
	}
	if msg := checkScalar(kd, k); msg != "" {
		return "map key " + msg
	}
	return ""
}

// checkScalar returns what is wrong with v as a value of a scalar or enum field, or "".
func checkScalar(fd protoreflect.FieldDescriptor, v any) string {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if _, ok := v.(bool); !ok {
			return "want true or false, got " + describe(v)
		}
	case protoreflect.StringKind:
		if _, ok := v.(string); !ok {
			return "want a string, got " + describe(v) + " (quote it)"
		}
	case protoreflect.BytesKind:
		s, ok := v.(string)
		if !ok {
			return "want a base64 string (bytes), got " + describe(v)
		}
		if !isBase64(s) {
			return fmt.Sprintf("want base64 (bytes), got %q", s)
		}
	case protoreflect.EnumKind:
		return checkEnum(fd.Enum(), v)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return checkFloat(v, fd.Kind() == protoreflect.FloatKind)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return checkInt(v, math.MinInt32, math.MaxInt32, "int32")
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return checkInt(v, math.MinInt64, math.MaxInt64, "int64")
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return checkUint(v, math.MaxUint32, "uint32")
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return checkUint(v, math.MaxUint64, "uint64")
	}
	return ""
}

func checkEnum(ed protoreflect.EnumDescriptor, v any) string {
	switch x := v.(type) {
	case string:
		if ed.Values().ByName(protoreflect.Name(x)) == nil {
			names := make([]string, 0, ed.Values().Len())
			for i := 0; i < ed.Values().Len(); i++ {
				names = append(names, string(ed.Values().Get(i).Name()))
			}
			return fmt.Sprintf("unknown value %q of %s (one of %s)", x, ed.FullName(), strings.Join(names, ", "))
		}
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 32); err != nil {
			return fmt.Sprintf("want a %s name, got %s", ed.FullName(), x)
		}
	default:
		return fmt.Sprintf("want a %s name, got %s", ed.FullName(), describe(v))
	}
	return ""
}

// number returns the text of a JSON number or of a string holding one (protojson accepts
// both for numeric fields).
func number(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return string(x), true
	case string:
		return x, true
	}
	return "", false
}

func checkFloat(v any, is32 bool) string {
	s, ok := number(v)
	if !ok {
		return "want a number, got " + describe(v)
	}
	switch s {
	case "NaN", "Infinity", "-Infinity":
		return ""
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || strings.TrimSpace(s) != s {
		return fmt.Sprintf("want a number, got %q", s)
	}
	if is32 && math.Abs(f) > math.MaxFloat32 {
		return fmt.Sprintf("%s is out of range for a float", s)
	}
	return ""
}

// integral parses an integer written plainly or as an integral float ("1e3", "10.0"), as
// protojson does.
func integral(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || strings.TrimSpace(s) != s {
		return 0, false
	}
	return f, true
}

func checkInt(v any, lo, hi int64, typ string) string {
	s, ok := number(v)
	if !ok {
		return fmt.Sprintf("want an integer (%s), got %s", typ, describe(v))
	}
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		n, _ := strconv.ParseInt(s, 10, 64)
		if n < lo || n > hi {
			return fmt.Sprintf("%s is out of range for %s", s, typ)
		}
		return ""
	}
	f, ok := integral(s)
	if !ok {
		return fmt.Sprintf("want an integer (%s), got %q", typ, s)
	}
	if f < float64(lo) || f > float64(hi) {
		return fmt.Sprintf("%s is out of range for %s", s, typ)
	}
	return ""
}

func checkUint(v any, hi uint64, typ string) string {
	s, ok := number(v)
	if !ok {
		return fmt.Sprintf("want a non-negative integer (%s), got %s", typ, describe(v))
	}
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		if n > hi {
			return fmt.Sprintf("%s is out of range for %s", s, typ)
		}
		return ""
	}
	f, ok := integral(s)
	if !ok {
		return fmt.Sprintf("want a non-negative integer (%s), got %q", typ, s)
	}
	if f < 0 || f > float64(hi) {
		return fmt.Sprintf("%s is out of range for %s", s, typ)
	}
	return ""
}

func isBase64(s string) bool {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if _, err := enc.DecodeString(s); err == nil {
			return true
		}
	}
	return false
}

var durationRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,9})?s$`)

// maxDurationSeconds is protobuf's Duration range, about 10000 years.
const maxDurationSeconds = 315_576_000_000

func (d *Decoder) checkWellKnown(errs *ypath.Errors, p ypath.Path, md protoreflect.MessageDescriptor, v any) {
	name := md.FullName()
	switch name {
	case "google.protobuf.Duration":
		s, ok := v.(string)
		if !ok || !durationRE.MatchString(s) {
			errs.Addf(p, "want a duration such as \"1.5s\" or \"0.250s\" (seconds with an s suffix), got %s", describeQ(v))
			return
		}
		secs, _ := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64)
		if math.Abs(secs) > maxDurationSeconds {
			errs.Addf(p, "duration %s is out of range", s)
		}
	case "google.protobuf.Timestamp":
		s, ok := v.(string)
		if !ok {
			errs.Addf(p, "want an RFC 3339 timestamp, got %s", describe(v))
			return
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			errs.Addf(p, "want an RFC 3339 timestamp, got %q", s)
		}
	case "google.protobuf.FieldMask":
		if _, ok := v.(string); !ok {
			errs.Addf(p, "want a field mask string, got %s", describe(v))
		}
	case "google.protobuf.Struct":
		if _, ok := v.(map[string]any); !ok {
			errs.Addf(p, "want an object, got %s", describe(v))
		}
	case "google.protobuf.ListValue":
		if _, ok := v.([]any); !ok {
			errs.Addf(p, "want a list, got %s", describe(v))
		}
	case "google.protobuf.Empty":
		if m, ok := v.(map[string]any); !ok || len(m) != 0 {
			errs.Addf(p, "want an empty object {}, got %s", describe(v))
		}
	case "google.protobuf.Value":
		// anything
	default: // wrappers: the JSON form of their single value field
		if fd := md.Fields().ByName("value"); fd != nil {
			if msg := checkScalar(fd, v); msg != "" {
				errs.Addf(p, "%s", msg)
			}
		}
	}
}

func (d *Decoder) checkAny(errs *ypath.Errors, p ypath.Path, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		errs.Addf(p, "want an object with an \"@type\", got %s", describe(v))
		return
	}
	url, isString := obj["@type"].(string)
	if !isString || url == "" {
		errs.Addf(p, `"@type" is missing`)
		return
	}
	mt, err := d.resolver().FindMessageByURL(url)
	if err != nil {
		if d.Unchecked != nil && d.Unchecked(url) {
			d.pending = append(d.pending, p)
			if d.OnUnchecked != nil {
				d.OnUnchecked(p, url)
			}
			return
		}
		errs.Addf(p.Field("@type"), "%s", d.unknownType(url))
		return
	}
	md := mt.Descriptor()
	rest := make(map[string]any, len(obj)-1)
	for k, fv := range obj {
		if k != "@type" {
			rest[k] = fv
		}
	}
	if wellKnownJSON[md.FullName()] || md.FullName() == "google.protobuf.Any" {
		// {"@type": ..., "value": <the JSON form>}
		for _, k := range sortedKeys(rest) {
			if k != "value" {
				errs.Addf(p.Field(k), "unknown field %q (an Any of %s holds only \"value\")", k, md.FullName())
			}
		}
		if val, ok := rest["value"]; ok {
			d.checkMessage(errs, p.Field("value"), md, val)
		}
		return
	}
	d.checkFields(errs, p, md, rest)
	if d.TypedStructInner != nil {
		if inner := typedStructTarget(md, rest); inner != "" {
			d.TypedStructInner(errs, p, inner, rest["value"])
		}
	}
}

// typedStructTarget is the type_url of an xds/udpa TypedStruct, or "".
func typedStructTarget(md protoreflect.MessageDescriptor, obj map[string]any) string {
	switch md.FullName() {
	case "xds.type.v3.TypedStruct", "udpa.type.v1.TypedStruct":
	default:
		return ""
	}
	s, _ := obj["type_url"].(string)
	if s == "" {
		s, _ = obj["typeUrl"].(string)
	}
	return s
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case json.Number:
		return "the number " + string(x)
	case string:
		return fmt.Sprintf("the string %q", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func describeQ(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return describe(v)
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
