// Package load turns an Envoy bootstrap file (YAML or JSON) into a validated
// bootstrapv3.Bootstrap, the way Envoy itself would: strict decoding with Envoy's protos
// (unknown fields and unknown Any types are errors) and protoc-gen-validate rules.
package load

import (
	"bytes"
	"encoding/json"
	"fmt"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Bytes decodes a YAML or JSON bootstrap. Errors carry YAML paths where the failing place is
// known, and every validation error is reported, not just the first. When decoding succeeded
// but validation failed, the decoded bootstrap is returned along with the error so that the
// caller can go on to report its own findings too.
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
	// The precheck names the YAML path of unknown fields and types; protojson's own messages
	// only give a byte offset into the converted JSON, which means nothing to the user.
	if err := precheck(bs.ProtoReflect().Descriptor(), tree); err != nil {
		return nil, err
	}
	if err := protojson.Unmarshal(js, bs); err != nil {
		return nil, fmt.Errorf("decode bootstrap: %w", err)
	}
	var errs ypath.Errors
	AddValidation(&errs, ypath.Path{}, bs)
	return bs, errs.Err()
}
