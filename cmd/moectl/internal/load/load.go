// Package load turns an Envoy bootstrap file (YAML or JSON) into a validated
// bootstrapv3.Bootstrap, the way Envoy itself would: strict decoding with Envoy's protos
// (unknown fields and unknown Any types are errors) and protoc-gen-validate rules.
//
// Decoder does the same for any message (xDS resources, EnvoyFilter specs, patch values)
// with a chosen set of known types.
package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"sigs.k8s.io/yaml"

	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Resolver finds message types by name or type URL (protoregistry.Types and
// protoregistry.GlobalTypes are ones).
type Resolver interface {
	protoregistry.MessageTypeResolver
	protoregistry.ExtensionTypeResolver
}

// Decoder decodes JSON trees (from YAML) into proto messages strictly.
type Decoder struct {
	// Types resolves "@type"s; nil means MoeHostTypes.
	Types Resolver
	// UnknownType words the problem of an "@type" that Types does not know; nil means
	// "type X is not supported by moe-host (unknown to moectl)".
	UnknownType func(url string) string
	// TypedStructInner, if set, is called for every xds/udpa TypedStruct Any that names a
	// type_url, with the YAML path of the Any and its "value", so the caller can check the
	// value as that type.
	TypedStructInner func(errs *ypath.Errors, p ypath.Path, typeURL string, value any)
	// Unchecked, if set, is asked about an "@type" that Types does not know: true accepts
	// the Any without checking its contents (a valid type moectl cannot decode), which is then
	// decoded as an empty google.protobuf.Empty. OnUnchecked is told where.
	Unchecked   func(url string) bool
	OnUnchecked func(p ypath.Path, url string)

	pending []ypath.Path
}

func (d *Decoder) resolver() Resolver {
	if d.Types == nil {
		return MoeHostTypes()
	}
	return d.Types
}

func (d *Decoder) unknownType(url string) string {
	if d.UnknownType != nil {
		return d.UnknownType(url)
	}
	return fmt.Sprintf("type %s is not supported by moe-host (unknown to moectl)", url)
}

// Resolver is the type set the decoder resolves Any types with.
func (d *Decoder) Resolver() Resolver { return d.resolver() }

// Decode decodes tree (a JSON value: map[string]any, []any, json.Number, string, bool, nil)
// into m. Problems are recorded under p; it reports whether m was decoded.
func (d *Decoder) Decode(errs *ypath.Errors, p ypath.Path, tree any, m proto.Message) bool {
	before := errs.Len()
	d.pending = nil
	d.precheck(errs, p, m.ProtoReflect().Descriptor(), tree)
	if errs.Len() > before {
		return false
	}
	if len(d.pending) > 0 {
		tree = deepCopy(tree)
		for _, at := range d.pending {
			tree = replaceAt(tree, at.Segments()[p.Len():], map[string]any{"@type": "type.googleapis.com/google.protobuf.Empty"})
		}
	}
	js, err := json.Marshal(tree)
	if err != nil {
		errs.Addf(p, "encode: %v", err)
		return false
	}
	if err := (protojson.UnmarshalOptions{Resolver: d.resolver()}).Unmarshal(js, m); err != nil {
		errs.Addf(p, "decode %s: %v", m.ProtoReflect().Descriptor().FullName(), err)
		return false
	}
	return true
}

// Check runs only the precheck of tree against md (no decoding), for values that are
// decoded later or elsewhere (TypedStruct contents).
func (d *Decoder) Check(errs *ypath.Errors, p ypath.Path, md protoreflect.MessageDescriptor, tree any) {
	d.precheck(errs, p, md, tree)
}

// Bytes decodes a YAML or JSON bootstrap. Errors carry YAML paths where the failing place is
// known, and every validation error is reported, not just the first. When decoding succeeded
// but validation failed, the decoded bootstrap is returned along with the error so that the
// caller can go on to report its own findings too. Only the types moe-host supports are known
// (MoeHostTypes): this is the loader of `moectl compile`.
func Bytes(data []byte) (*bootstrapv3.Bootstrap, error) {
	// YAML is a superset of JSON, so one path serves both formats. Strict: a duplicated key
	// would otherwise silently keep only one of its values.
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("parse yaml: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, fmt.Errorf("bootstrap is empty")
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("parse yaml: %w", err)
	}
	bs := &bootstrapv3.Bootstrap{}
	var errs ypath.Errors
	d := &Decoder{}
	if !d.Decode(&errs, ypath.Path{}, tree, bs) {
		return nil, errs.Err()
	}
	AddValidation(&errs, ypath.Path{}, bs)
	return bs, errs.Err()
}

// moeHostPackages are the proto packages whose types moe-host's compiler knows (see
// types.go): a config that carries any other type inside an Any is refused before decoding.
var moeHostPackages = map[protoreflect.FullName]bool{
	"udpa.type.v1": true,
	"xds.type.v3":  true,
	"envoy.extensions.filters.http.golang.v3alpha":                true,
	"envoy.extensions.access_loggers.file.v3":                     true,
	"envoy.extensions.access_loggers.stream.v3":                   true,
	"envoy.config.accesslog.v3":                                   true,
	"envoy.config.bootstrap.v3":                                   true,
	"envoy.config.cluster.v3":                                     true,
	"envoy.config.core.v3":                                        true,
	"envoy.config.endpoint.v3":                                    true,
	"envoy.config.listener.v3":                                    true,
	"envoy.config.route.v3":                                       true,
	"envoy.extensions.filters.http.router.v3":                     true,
	"envoy.extensions.filters.network.http_connection_manager.v3": true,
	"envoy.extensions.transport_sockets.tls.v3":                   true,
	"google.protobuf":                                             true,
}

var (
	moeHostOnce  sync.Once
	moeHostTypes *protoregistry.Types
)

// MoeHostTypes are the message types of moeHostPackages. The moectl binary links every Envoy
// type (for `moectl validate`), so the registry of the process cannot be used for this.
func MoeHostTypes() Resolver {
	moeHostOnce.Do(func() {
		moeHostTypes = new(protoregistry.Types)
		protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
			if moeHostPackages[mt.Descriptor().ParentFile().Package()] {
				_ = moeHostTypes.RegisterMessage(mt)
			}
			return true
		})
	})
	return moeHostTypes
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// replaceAt sets the value at the path segments (which exist: precheck walked them).
func replaceAt(tree any, segs []ypath.Seg, v any) any {
	if len(segs) == 0 {
		return v
	}
	s := segs[0]
	switch x := tree.(type) {
	case map[string]any:
		if e, ok := x[s.Name]; ok {
			x[s.Name] = replaceAt(e, segs[1:], v)
		}
	case []any:
		if s.IsIdx && s.Index < len(x) {
			x[s.Index] = replaceAt(x[s.Index], segs[1:], v)
		}
	}
	return tree
}
