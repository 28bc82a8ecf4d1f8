package compile

import (
	"bytes"
	"encoding/json"
	"time"

	udpaannotations "github.com/cncf/xds/go/udpa/annotations"
	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// configDump is what Envoy's admin /config_dump answers for a static bootstrap
// (source/server/admin/config_dump_handler.cc addAllConfigToDump): one dump per config tracker
// entry in the order of their names (bootstrap, clusters, listeners, routes, scopedroutes,
// secrets), sensitive fields redacted (MessageUtil::redact), pretty JSON with proto field
// names. Static resources are stamped with the time moectl compiled them, which is when
// moe-host loads them.
func configDump(bs *bootstrapv3.Bootstrap, now time.Time) (json.RawMessage, error) {
	ts := timestamppb.New(now)
	var configs []proto.Message
	configs = append(configs, &adminv3.BootstrapConfigDump{Bootstrap: proto.Clone(bs).(*bootstrapv3.Bootstrap), LastUpdated: ts})

	clusters := &adminv3.ClustersConfigDump{}
	for _, c := range bs.GetStaticResources().GetClusters() {
		a, err := anypb.New(c)
		if err != nil {
			return nil, err
		}
		clusters.StaticClusters = append(clusters.StaticClusters, &adminv3.ClustersConfigDump_StaticCluster{Cluster: a, LastUpdated: ts})
	}
	configs = append(configs, clusters)

	listeners := &adminv3.ListenersConfigDump{}
	routes := &adminv3.RoutesConfigDump{}
	for _, l := range bs.GetStaticResources().GetListeners() {
		a, err := anypb.New(l)
		if err != nil {
			return nil, err
		}
		listeners.StaticListeners = append(listeners.StaticListeners, &adminv3.ListenersConfigDump_StaticListener{Listener: a, LastUpdated: ts})
		// Inline route configurations are static route configs (StaticRouteConfigProviderImpl).
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				msg, err := f.GetTypedConfig().UnmarshalNew()
				if err != nil {
					continue
				}
				if hcm, ok := msg.(*hcmv3.HttpConnectionManager); ok && hcm.GetRouteConfig() != nil {
					ra, err := anypb.New(hcm.GetRouteConfig())
					if err != nil {
						return nil, err
					}
					routes.StaticRouteConfigs = append(routes.StaticRouteConfigs, &adminv3.RoutesConfigDump_StaticRouteConfig{RouteConfig: ra, LastUpdated: ts})
				}
			}
		}
	}
	configs = append(configs, listeners, routes, &adminv3.ScopedRoutesConfigDump{})

	secrets := &adminv3.SecretsConfigDump{}
	for _, s := range bs.GetStaticResources().GetSecrets() {
		a, err := anypb.New(s)
		if err != nil {
			return nil, err
		}
		secrets.StaticSecrets = append(secrets.StaticSecrets, &adminv3.SecretsConfigDump_StaticSecret{Name: s.GetName(), LastUpdated: ts, Secret: a})
	}
	configs = append(configs, secrets)

	dump := &adminv3.ConfigDump{}
	for _, m := range configs {
		a, err := anypb.New(m)
		if err != nil {
			return nil, err
		}
		dump.Configs = append(dump.Configs, a)
	}
	redact(dump.ProtoReflect(), false)
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(dump)
	if err != nil {
		return nil, err
	}
	// protojson's spacing is deliberately unstable; Envoy pretty-prints with two spaces.
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// resourceDump is one xDS resource as /config_dump shows it (a dynamic listener, cluster or
// route table, config_dump_handler.cc): an Any, redacted, with proto field names, as compact
// JSON text ("" if it cannot be marshalled). moe-host places it in its dump.
func resourceDump(m proto.Message) string {
	a, err := anypb.New(m)
	if err != nil {
		return ""
	}
	redact(a.ProtoReflect(), false)
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(a)
	if err != nil {
		return ""
	}
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		return ""
	}
	return out.String()
}

// inlineRouteConfig is the route_config of a listener's HTTP connection manager (nil with RDS).
func inlineRouteConfig(l *listenerv3.Listener) *routev3.RouteConfiguration {
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			msg, err := f.GetTypedConfig().UnmarshalNew()
			if err != nil {
				continue
			}
			if hcm, ok := msg.(*hcmv3.HttpConnectionManager); ok && hcm.GetRouteConfig() != nil {
				return hcm.GetRouteConfig()
			}
		}
	}
	return nil
}

// redact is MessageUtil::redact (source/common/protobuf/utility.cc): fields marked
// udpa.annotations.sensitive, and everything below them, lose their values: strings and bytes
// become "[redacted]", other scalars are cleared; map values only. Anys are redacted inside.
func redact(m protoreflect.Message, sensitiveAncestor bool) {
	if a, ok := m.Interface().(*anypb.Any); ok {
		inner, err := a.UnmarshalNew()
		if err != nil {
			return
		}
		redact(inner.ProtoReflect(), sensitiveAncestor)
		if b, err := (proto.MarshalOptions{Deterministic: true}).Marshal(inner); err == nil {
			a.Value = b
		}
		return
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		sensitive := sensitiveAncestor
		if opts := fd.Options(); opts != nil && proto.HasExtension(opts, udpaannotations.E_Sensitive) {
			sensitive = sensitive || proto.GetExtension(opts, udpaannotations.E_Sensitive).(bool)
		}
		isText := fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.BytesKind
		redacted := func() protoreflect.Value {
			if fd.Kind() == protoreflect.BytesKind {
				return protoreflect.ValueOfBytes([]byte("[redacted]"))
			}
			return protoreflect.ValueOfString("[redacted]")
		}
		switch {
		case fd.IsMap():
			vd := fd.MapValue()
			mp := m.Mutable(fd).Map()
			var keys []protoreflect.MapKey
			mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			for _, k := range keys {
				v := mp.Get(k)
				switch {
				case vd.Kind() == protoreflect.MessageKind:
					redact(v.Message(), sensitive)
				case sensitive && (vd.Kind() == protoreflect.StringKind || vd.Kind() == protoreflect.BytesKind):
					if vd.Kind() == protoreflect.BytesKind {
						mp.Set(k, protoreflect.ValueOfBytes([]byte("[redacted]")))
					} else {
						mp.Set(k, protoreflect.ValueOfString("[redacted]"))
					}
				case sensitive:
					mp.Set(k, vd.Default())
				}
			}
			if mp.Len() == 0 {
				m.Clear(fd)
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			if fd.IsList() {
				l := m.Get(fd).List()
				for j := 0; j < l.Len(); j++ {
					redact(l.Get(j).Message(), sensitive)
				}
			} else if m.Has(fd) {
				redact(m.Mutable(fd).Message(), sensitive)
			}
		case sensitive && isText:
			if fd.IsList() {
				l := m.Mutable(fd).List()
				for j := 0; j < l.Len(); j++ {
					l.Set(j, redacted())
				}
			} else if m.Has(fd) {
				m.Set(fd, redacted())
			}
		case sensitive:
			m.Clear(fd)
		}
	}
}
