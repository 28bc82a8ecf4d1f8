package compile

import (
	"encoding/base64"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/moeproxy/moe/cmd/moectl/internal/load"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Ignored lists, per proto message, fields that are accepted when set and then ignored
// because they do not change how moe-host serves traffic. Keep cmd/moectl/README.md in sync.
var Ignored = map[protoreflect.FullName][]protoreflect.Name{
	// Node identity and runtime layers only matter to a management server / runtime overrides
	// moe-host does not have.
	"envoy.config.bootstrap.v3.Bootstrap": {"node", "layered_runtime"},
	// Admin access logging and profiling output do not affect proxied traffic.
	"envoy.config.bootstrap.v3.Admin": {"access_log_path", "access_log", "profile_path"},
	// moe-host resolves names with the system resolver; the address family preference is
	// Envoy's resolver tuning.
	"envoy.config.cluster.v3.Cluster": {"dns_lookup_family"},
	// Informational: the cluster that owns the assignment is the enclosing one.
	"envoy.config.endpoint.v3.ClusterLoadAssignment": {"cluster_name"},
	// Envoy itself ignores merge_policy (the Go side merges per-route config).
	"envoy.extensions.filters.http.golang.v3alpha.Config": {"merge_policy"},
}

// only refuses every field of m that is set and is neither handled by the caller nor listed in
// Ignored. "Set" is proto presence: a proto3 scalar or enum at its default is not set, which
// is why lb_policy: ROUND_ROBIN or codec_type: AUTO pass without being listed.
func (c *compiler) only(p ypath.Path, m proto.Message, handled ...protoreflect.Name) {
	r := m.ProtoReflect()
	if !r.IsValid() {
		return
	}
	md := r.Descriptor()
	allowed := map[protoreflect.Name]bool{}
	for _, n := range handled {
		if md.Fields().ByName(n) == nil {
			panic(fmt.Sprintf("compile: %s has no field %s", md.FullName(), n))
		}
		allowed[n] = true
	}
	for _, n := range Ignored[md.FullName()] {
		allowed[n] = true
	}
	var refused []protoreflect.FieldDescriptor
	r.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if !allowed[fd.Name()] {
			refused = append(refused, fd)
		}
		return true
	})
	sort.Slice(refused, func(i, j int) bool { return refused[i].Number() < refused[j].Number() })
	for _, fd := range refused {
		c.errs.Addf(p.Field(string(fd.Name())), "not supported by moe-host")
	}
}

// unpack decodes an Any and runs its validation rules, which PGV does not do through Any.
func (c *compiler) unpack(p ypath.Path, a *anypb.Any) (proto.Message, bool) {
	m, err := a.UnmarshalNew()
	if err != nil {
		c.errs.Addf(p, "decode %s: %v", a.GetTypeUrl(), err)
		return nil, false
	}
	load.AddValidation(&c.errs, p, m)
	return m, true
}

// anyBase64 is base64 of the serialized Any itself (type_url + value): the bytes Envoy passes
// to the Go side as plugin config. An unset Any serializes to no bytes, as in Envoy.
func (c *compiler) anyBase64(p ypath.Path, a *anypb.Any) string {
	if a == nil {
		return ""
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(a)
	if err != nil {
		c.errs.Addf(p, "serialize: %v", err)
		return ""
	}
	return base64.StdEncoding.EncodeToString(b)
}

// millis converts a duration to whole milliseconds, truncating like Envoy's
// DurationUtil::durationToMilliseconds; def applies when unset.
func (c *compiler) millis(p ypath.Path, d *durationpb.Duration, def uint64) uint64 {
	if d == nil {
		return def
	}
	if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
		c.errs.Addf(p, "must be a non-negative duration")
		return def
	}
	return uint64(d.AsDuration().Milliseconds())
}

func u32(w *wrapperspb.UInt32Value, def uint32) uint32 {
	if w == nil {
		return def
	}
	return w.GetValue()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
