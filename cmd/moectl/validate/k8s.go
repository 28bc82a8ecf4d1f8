package validate

import (
	"fmt"
	"regexp"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	extensions "istio.io/api/extensions/v1alpha1"
	networking "istio.io/api/networking/v1alpha3"
	networkingbeta "istio.io/api/networking/v1beta1"
	security "istio.io/api/security/v1beta1"
	telemetry "istio.io/api/telemetry/v1alpha1"

	"github.com/moeproxy/moe/cmd/moectl/internal/load"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
	"github.com/moeproxy/moe/istio"
)

// istioKinds are the Istio resources moectl decodes (group -> versions, kind -> spec type).
// networking.istio.io v1 and v1beta1 are aliases of the v1alpha3 messages.
var istioKinds = map[string]struct {
	versions []string
	kinds    map[string]func() proto.Message
}{
	"networking.istio.io": {[]string{"v1", "v1beta1", "v1alpha3"}, map[string]func() proto.Message{
		"Gateway":         func() proto.Message { return &networking.Gateway{} },
		"VirtualService":  func() proto.Message { return &networking.VirtualService{} },
		"DestinationRule": func() proto.Message { return &networking.DestinationRule{} },
		"ServiceEntry":    func() proto.Message { return &networking.ServiceEntry{} },
		"Sidecar":         func() proto.Message { return &networking.Sidecar{} },
		"WorkloadEntry":   func() proto.Message { return &networking.WorkloadEntry{} },
		"WorkloadGroup":   func() proto.Message { return &networking.WorkloadGroup{} },
		"EnvoyFilter":     func() proto.Message { return &networking.EnvoyFilter{} },
		"ProxyConfig":     func() proto.Message { return &networkingbeta.ProxyConfig{} },
	}},
	"security.istio.io": {[]string{"v1", "v1beta1"}, map[string]func() proto.Message{
		"AuthorizationPolicy":   func() proto.Message { return &security.AuthorizationPolicy{} },
		"PeerAuthentication":    func() proto.Message { return &security.PeerAuthentication{} },
		"RequestAuthentication": func() proto.Message { return &security.RequestAuthentication{} },
	}},
	"telemetry.istio.io": {[]string{"v1", "v1alpha1"}, map[string]func() proto.Message{
		"Telemetry": func() proto.Message { return &telemetry.Telemetry{} },
	}},
	"extensions.istio.io": {[]string{"v1alpha1"}, map[string]func() proto.Message{
		"WasmPlugin": func() proto.Message { return &extensions.WasmPlugin{} },
	}},
}

var envelopeFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "spec": true, "status": true}

// kubernetes checks one Kubernetes object: Istio kinds are decoded strictly with Istio's
// protos; EnvoyFilters are checked in depth; other kinds are listed as skipped.
func (d *doc) kubernetes(obj map[string]any) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	id := kind
	if name != "" {
		if ns != "" {
			id += " " + ns + "/" + name
		} else {
			id += " " + name
		}
	}
	d.object = id
	group, version, _ := strings.Cut(apiVersion, "/")
	g, known := istioKinds[group]
	newSpec := g.kinds[kind]
	if !known || newSpec == nil {
		if known && kind != "" {
			d.errorf(ypath.Path{}.Field("kind"), "unknown kind %q in %s (known: %s)", kind, group, kindNames(g.kinds))
			return
		}
		d.fr.Skipped = append(d.fr.Skipped, id)
		return
	}
	d.fr.Checked = append(d.fr.Checked, id)
	okVersion := false
	for _, v := range g.versions {
		okVersion = okVersion || v == version
	}
	if kind == "EnvoyFilter" {
		okVersion = version == "v1alpha3"
	}
	if !okVersion {
		want := strings.Join(g.versions, ", ")
		if kind == "EnvoyFilter" {
			want = "v1alpha3"
		}
		d.errorf(ypath.Path{}.Field("apiVersion"), "%s is not served as %s (versions: %s)", kind, apiVersion, want)
	}
	for k := range obj {
		if !envelopeFields[k] {
			d.errorf(ypath.Path{}.Field(k), "unknown field %q of a Kubernetes object (apiVersion, kind, metadata, spec, status)", k)
		}
	}
	if name == "" {
		if _, gen := md["generateName"]; !gen {
			d.errorf(ypath.Path{}.Field("metadata"), "metadata.name is required")
		}
	}
	specTree, hasSpec := obj["spec"]
	if !hasSpec {
		d.errorf(ypath.Path{}, "spec is required")
		return
	}
	specPath := ypath.Path{}.Field("spec")
	spec := newSpec()
	if !d.decode(specPath, specTree, spec) {
		return
	}
	var errs ypath.Errors
	load.AddValidation(&errs, specPath, spec)
	d.addErrs(&errs, Error, "")
	if ef, ok := spec.(*networking.EnvoyFilter); ok {
		d.envoyFilter(specPath, specTree, ef, ns)
	}
}

func kindNames(m map[string]func() proto.Message) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sortStrings(names)
	return strings.Join(names, ", ")
}

// envoyFilter checks what istiod checks when it accepts an EnvoyFilter and what Envoy would
// then refuse: each patch's applyTo, match and operation line up, its value decodes as the
// Envoy type of its applyTo with every validation rule (inside Anys too), moe plugin configs
// are valid, and the patches applied to a representative gateway or sidecar listener give a
// filter chain Envoy accepts.
func (d *doc) envoyFilter(p ypath.Path, specTree any, ef *networking.EnvoyFilter, namespace string) {
	if ef.GetWorkloadSelector() != nil && len(ef.GetTargetRefs()) > 0 {
		d.errorf(p.Field("targetRefs"), "only one of workloadSelector and targetRefs may be set")
	}
	if ws := ef.GetWorkloadSelector(); ws != nil && len(ws.GetLabels()) == 0 {
		d.warnf(p.Field("workloadSelector"), "workloadSelector without labels: the EnvoyFilter applies to every proxy of the namespace")
	}
	if namespace == "" && ef.GetWorkloadSelector() != nil {
		d.warnf(ypath.Path{}.Field("metadata"), "no metadata.namespace: kubectl applies it to the current namespace, and the workloadSelector only selects proxies there")
	}
	patches := treeAt(specTree, "configPatches", "config_patches")
	w := d.walker()
	values := make([]proto.Message, len(ef.GetConfigPatches()))
	for i, cp := range ef.GetConfigPatches() {
		cpp := p.Field("configPatches").Index(i)
		if cp == nil {
			d.errorf(cpp, "empty config patch")
			continue
		}
		if cp.GetMatch().GetContext() == networking.EnvoyFilter_WAYPOINT {
			continue // istiod does not validate waypoint patches either
		}
		if cp.GetApplyTo() == networking.EnvoyFilter_INVALID {
			d.errorf(cpp.Field("applyTo"), "applyTo is required")
			continue
		}
		if cp.GetPatch() == nil {
			d.errorf(cpp.Field("patch"), "patch is required")
			continue
		}
		op := cp.GetPatch().GetOperation()
		if op == networking.EnvoyFilter_Patch_INVALID {
			d.errorf(cpp.Field("patch").Field("operation"), "patch.operation is required")
			continue
		}
		if op != networking.EnvoyFilter_Patch_REMOVE && cp.GetPatch().GetValue() == nil {
			d.errorf(cpp.Field("patch"), "patch.value is required for %s", op)
			continue
		}
		if !d.matchLinesUp(cpp.Field("match"), cp) {
			continue
		}
		if msg := operationProblem(cp.GetApplyTo(), op); msg != "" {
			d.warnf(cpp.Field("patch").Field("operation"), "%s", msg)
		}
		if op == networking.EnvoyFilter_Patch_REMOVE {
			continue
		}
		vp := cpp.Field("patch").Field("value")
		valueTree := treeAt(treeAt(index(patches, i), "patch"), "value")
		obj := istio.NewPatchValue(cp.GetApplyTo())
		if obj == nil {
			d.errorf(cpp.Field("applyTo"), "applyTo %s takes no value moectl can check", cp.GetApplyTo())
			continue
		}
		if !d.decode(vp, valueTree, obj) {
			continue
		}
		values[i] = obj
		if op == networking.EnvoyFilter_Patch_MERGE {
			// A MERGE value is partial: its rules are checked on a representative object with
			// the value merged in, as istiod merges it.
			merged := mergeBase(cp.GetApplyTo())
			proto.Merge(merged, obj)
			var errs ypath.Errors
			load.AddValidation(&errs, vp, merged)
			d.addErrs(&errs, Error, "after merging into a representative "+string(merged.ProtoReflect().Descriptor().Name())+": ")
			w.message(vp, obj, false)
			continue
		}
		w.message(vp, obj, true)
	}
	w.finish()
	d.representative(p, ef, values)
}

// matchLinesUp reports false (after reporting why) when a patch's match cannot select
// objects of its applyTo, as istiod refuses it.
func (d *doc) matchLinesUp(p ypath.Path, cp *networking.EnvoyFilter_EnvoyConfigObjectPatch) bool {
	m := cp.GetMatch()
	if v := m.GetProxy().GetProxyVersion(); v != "" {
		if _, err := regexp.Compile(v); err != nil {
			d.errorf(p.Field("proxy").Field("proxyVersion"), "invalid regular expression: %v", err)
			return false
		}
	}
	if m.GetObjectTypes() == nil {
		return true
	}
	switch cp.GetApplyTo() {
	case networking.EnvoyFilter_LISTENER, networking.EnvoyFilter_FILTER_CHAIN, networking.EnvoyFilter_NETWORK_FILTER,
		networking.EnvoyFilter_HTTP_FILTER, networking.EnvoyFilter_LISTENER_FILTER:
		lm := m.GetListener()
		if lm == nil {
			d.errorf(p, "applyTo %s needs a listener match, not a %s match", cp.GetApplyTo(), matchKind(m))
			return false
		}
		f := lm.GetFilterChain().GetFilter()
		if f == nil {
			return true
		}
		lp := p.Field("listener").Field("filterChain").Field("filter")
		if cp.GetApplyTo() == networking.EnvoyFilter_LISTENER || cp.GetApplyTo() == networking.EnvoyFilter_FILTER_CHAIN {
			d.warnf(lp, "a filter match has no effect with applyTo %s", cp.GetApplyTo())
		}
		if f.GetName() == "" {
			d.errorf(lp.Field("name"), "a filter match needs the name of the filter to match")
			return false
		}
		if sf := f.GetSubFilter(); sf != nil {
			if cp.GetApplyTo() != networking.EnvoyFilter_HTTP_FILTER {
				d.errorf(lp.Field("subFilter"), "a subFilter match is only for applyTo HTTP_FILTER")
				return false
			}
			if f.GetName() != "envoy.filters.network.http_connection_manager" && f.GetName() != "envoy.http_connection_manager" {
				d.errorf(lp.Field("name"), "a subFilter match needs the filter match to be envoy.filters.network.http_connection_manager")
				return false
			}
			if sf.GetName() == "" {
				d.errorf(lp.Field("subFilter").Field("name"), "a subFilter match needs the name of the HTTP filter to match")
				return false
			}
		}
	case networking.EnvoyFilter_ROUTE_CONFIGURATION, networking.EnvoyFilter_VIRTUAL_HOST, networking.EnvoyFilter_HTTP_ROUTE:
		if m.GetRouteConfiguration() == nil {
			d.errorf(p, "applyTo %s needs a routeConfiguration match, not a %s match", cp.GetApplyTo(), matchKind(m))
			return false
		}
	case networking.EnvoyFilter_CLUSTER:
		if m.GetCluster() == nil {
			d.errorf(p, "applyTo CLUSTER needs a cluster match, not a %s match", matchKind(m))
			return false
		}
	}
	return true
}

func matchKind(m *networking.EnvoyFilter_EnvoyConfigObjectMatch) string {
	switch {
	case m.GetListener() != nil:
		return "listener"
	case m.GetRouteConfiguration() != nil:
		return "routeConfiguration"
	case m.GetCluster() != nil:
		return "cluster"
	}
	return "other"
}

// operationProblem says why istiod would do nothing with an operation on objects of applyTo
// (it skips such patches without a word), or "".
func operationProblem(applyTo networking.EnvoyFilter_ApplyTo, op networking.EnvoyFilter_Patch_Operation) string {
	switch op {
	case networking.EnvoyFilter_Patch_INSERT_BEFORE, networking.EnvoyFilter_Patch_INSERT_AFTER, networking.EnvoyFilter_Patch_INSERT_FIRST:
		switch applyTo {
		case networking.EnvoyFilter_LISTENER, networking.EnvoyFilter_CLUSTER, networking.EnvoyFilter_VIRTUAL_HOST,
			networking.EnvoyFilter_ROUTE_CONFIGURATION, networking.EnvoyFilter_EXTENSION_CONFIG, networking.EnvoyFilter_BOOTSTRAP:
			return fmt.Sprintf("%s orders an element among its siblings: istiod does not apply it to %s (use ADD or MERGE)", op, applyTo)
		}
	}
	return ""
}

// mergeBase is a minimal valid object of applyTo that a MERGE value is merged into.
func mergeBase(a networking.EnvoyFilter_ApplyTo) proto.Message {
	switch a {
	case networking.EnvoyFilter_HTTP_ROUTE:
		return istio.RepresentativeRoute()
	case networking.EnvoyFilter_VIRTUAL_HOST:
		return &routev3.VirtualHost{Name: "vh", Domains: []string{"*"}}
	case networking.EnvoyFilter_LISTENER:
		return istio.RepresentativeListener(istio.Gateway)
	case networking.EnvoyFilter_CLUSTER:
		return &clusterv3.Cluster{Name: "c"}
	case networking.EnvoyFilter_HTTP_FILTER:
		return &hcmv3.HttpFilter{Name: "f"}
	case networking.EnvoyFilter_NETWORK_FILTER:
		return &listenerv3.Filter{Name: "f"}
	case networking.EnvoyFilter_LISTENER_FILTER:
		return &listenerv3.ListenerFilter{Name: "f"}
	case networking.EnvoyFilter_EXTENSION_CONFIG:
		return &corev3.TypedExtensionConfig{Name: "f"}
	}
	return istio.NewPatchValue(a)
}

// representative applies the EnvoyFilter's listener and route patches to a representative
// gateway (or sidecar inbound) listener and route table, the way istiod applies them, and
// checks the result as Envoy would: the golang filter must land before the router, route
// patches must find their virtual host and route.
func (d *doc) representative(p ypath.Path, ef *networking.EnvoyFilter, values []proto.Message) {
	ctx := istio.Gateway
	for _, cp := range ef.GetConfigPatches() {
		switch cp.GetMatch().GetContext() {
		case networking.EnvoyFilter_SIDECAR_INBOUND:
			ctx = istio.SidecarInbound
		case networking.EnvoyFilter_SIDECAR_OUTBOUND:
			ctx = istio.SidecarOutbound
		}
	}
	res := istio.Apply(ctx, ef, values)
	for _, pr := range res.Problems {
		at := p.Field("configPatches").Index(pr.Patch)
		if pr.Warning {
			d.warnf(at, "%s", pr.Message)
		} else {
			d.errorf(at, "%s", pr.Message)
		}
	}
}

// treeAt is the value under the first of names that the object has.
func treeAt(v any, names ...string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	for _, n := range names {
		if x, ok := m[n]; ok {
			return x
		}
	}
	return nil
}

func index(v any, i int) any {
	l, ok := v.([]any)
	if !ok || i >= len(l) {
		return nil
	}
	return l[i]
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
