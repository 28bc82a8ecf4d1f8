package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	udpatype "github.com/cncf/xds/go/udpa/type/v1"
	xdstype "github.com/cncf/xds/go/xds/type/v3"
	golangv3alpha "github.com/envoyproxy/go-control-plane/contrib/envoy/extensions/filters/http/golang/v3alpha"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/moeproxy/moe/cmd/moectl/internal/compile"
	"github.com/moeproxy/moe/cmd/moectl/internal/envoytypes"
	"github.com/moeproxy/moe/cmd/moectl/internal/load"
	"github.com/moeproxy/moe/cmd/moectl/internal/pluginconfig"
	"github.com/moeproxy/moe/cmd/moectl/internal/yamltree"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

const (
	routerType   = "envoy.extensions.filters.http.router.v3.Router"
	golangFilter = "envoy.extensions.filters.http.golang.v3alpha.Config"
)

// decoder is a strict decoder knowing every Envoy v1.39 (contrib) config type. A type of a
// package moectl does not link is accepted unchecked, with a warning.
func (d *doc) decoder() *load.Decoder {
	return &load.Decoder{
		Types: envoytypes.Types(),
		UnknownType: func(url string) string {
			return fmt.Sprintf("unknown type %s: not an Envoy v1.39 (contrib) config type (Envoy refuses it: no registered implementation)", url)
		},
		Unchecked: func(url string) bool { return envoytypes.Unlinked(typeName(url)) },
		OnUnchecked: func(p ypath.Path, url string) {
			d.warnf(p, "type %s is valid in Envoy but not linked into moectl (it needs the gRPC or OpenTelemetry modules): its contents are not checked", url)
		},
	}
}

func typeName(url string) string { return url[strings.LastIndexByte(url, '/')+1:] }

// decode decodes tree into m at p, reporting problems; false when m could not be decoded.
func (d *doc) decode(p ypath.Path, tree any, m proto.Message) bool {
	var errs ypath.Errors
	ok := d.decoder().Decode(&errs, p, tree, m)
	d.addErrs(&errs, Error, "")
	return ok
}

func (d *doc) bootstrap(yd yamltree.Doc) {
	d.fr.Checked = append(d.fr.Checked, "Envoy bootstrap")
	bs := &bootstrapv3.Bootstrap{}
	if !d.decode(ypath.Path{}, yd.Root.Value, bs) {
		return
	}
	w := d.walker()
	w.bootstrap = true
	w.message(ypath.Path{}, bs, true)
	w.finish()
	d.bootstrapChecks(bs, w)
	if d.r.opts.TargetMoeHost {
		d.moeHost(bs)
	}
}

// moeHost adds what moe-host cannot run, as warnings: the refusals of `moectl compile`,
// whose converters list what moe-host implements and refuse everything else.
func (d *doc) moeHost(bs *bootstrapv3.Bootstrap) {
	_, err := compile.Compile(bs, compile.Options{SkipLibraryCheck: d.r.opts.SkipLibraryCheck, SkipPluginCheck: true})
	if err == nil {
		return
	}
	var list ypath.List
	if !asList(err, &list) {
		d.add(Warning, ypath.Path{}, "", "", "moe-host cannot run this bootstrap: "+err.Error())
		return
	}
	for _, e := range list {
		if pe, ok := e.(*ypath.Error); ok {
			msg := pe.Msg
			if !strings.Contains(msg, "moe-host") {
				msg = "moe-host: " + msg
			}
			d.add(Warning, pe.Path, "", "", msg)
			continue
		}
		d.add(Warning, ypath.Path{}, "", "", "moe-host: "+e.Error())
	}
}

func asList(err error, l *ypath.List) bool {
	if x, ok := err.(ypath.List); ok {
		*l = x
		return true
	}
	return false
}

// bootstrapChecks are what Envoy checks when it loads a bootstrap, beyond the protos' rules.
func (d *doc) bootstrapChecks(bs *bootstrapv3.Bootstrap, w *walker) {
	sr := bs.GetStaticResources()
	p := ypath.Path{}.Field("static_resources")
	seen := map[string]int{}
	for i, l := range sr.GetListeners() {
		if j, dup := seen[l.GetName()]; dup && l.GetName() != "" {
			d.errorf(p.Field("listeners").Index(i).Field("name"), "listener name %q is already used by listeners[%d] (Envoy refuses duplicate listener names)", l.GetName(), j)
		}
		seen[l.GetName()] = i
	}
	clusters := map[string]int{}
	for i, c := range sr.GetClusters() {
		if j, dup := clusters[c.GetName()]; dup {
			d.errorf(p.Field("clusters").Index(i).Field("name"), "cluster name %q is already used by clusters[%d] (Envoy refuses duplicate cluster names)", c.GetName(), j)
		}
		clusters[c.GetName()] = i
	}
	// Envoy's Config::Utility::checkLocalInfo, for every xDS subscription (files included).
	if dr := bs.GetDynamicResources(); (dr.GetLdsConfig() != nil || dr.GetCdsConfig() != nil || dr.GetAdsConfig() != nil) &&
		(bs.GetNode().GetId() == "" || bs.GetNode().GetCluster() == "") {
		d.errorf(ypath.Path{}.Field("dynamic_resources"), "node.id and node.cluster are required for xDS subscriptions (Envoy: \"node 'id' and 'cluster' are required\")")
	}
	// Clusters may also arrive by CDS: then only Envoy knows at run time.
	if bs.GetDynamicResources().GetCdsConfig() != nil ||
		bs.GetDynamicResources().GetCdsResourcesLocator() != "" {
		return
	}
	for _, ref := range w.clusterRefs {
		if _, ok := clusters[ref.name]; !ok {
			d.errorf(ref.at, "unknown cluster %q: Envoy refuses a static route table naming a cluster it does not have (set validate_clusters: false on the route_config for clusters that arrive later)", ref.name)
		}
	}
}

// xdsResources checks a file of xDS resources in DiscoveryResponse form, as Envoy reads
// them from a path_config_source: {version_info, resources: [{"@type": ...}, ...]}.
func (d *doc) xdsResources(obj map[string]any) {
	allowed := map[string]bool{"version_info": true, "versionInfo": true, "resources": true, "type_url": true, "typeUrl": true,
		"nonce": true, "canary": true, "control_plane": true, "controlPlane": true, "@type": true}
	for k := range obj {
		if !allowed[k] {
			d.errorf(ypath.Path{}.Field(k), "unknown field %q in an xDS resource file (a DiscoveryResponse: version_info, resources, type_url)", k)
		}
	}
	list, ok := obj["resources"].([]any)
	if !ok {
		d.errorf(ypath.Path{}.Field("resources"), "want a list of resources, each with an \"@type\"")
		return
	}
	typeURL := ""
	if s, ok := obj["type_url"].(string); ok {
		typeURL = s
	} else if s, ok := obj["typeUrl"].(string); ok {
		typeURL = s
	}
	w := d.walker()
	for i, e := range list {
		p := ypath.Path{}.Field("resources").Index(i)
		a := &anypb.Any{}
		if !d.decode(p, e, a) {
			continue
		}
		if typeURL != "" && a.GetTypeUrl() != typeURL {
			d.errorf(p.Field("@type"), "type %s in a response of type_url %s (Envoy refuses a resource of another type)", a.GetTypeUrl(), typeURL)
		}
		d.fr.Checked = append(d.fr.Checked, resourceName(a))
		w.any(p, a)
	}
	w.finish()
}

// xdsResource checks a document that is one resource ({"@type": ..., ...}).
func (d *doc) xdsResource(obj map[string]any) {
	a := &anypb.Any{}
	if !d.decode(ypath.Path{}, obj, a) {
		return
	}
	d.fr.Checked = append(d.fr.Checked, resourceName(a))
	w := d.walker()
	w.any(ypath.Path{}, a)
	w.finish()
}

func resourceName(a *anypb.Any) string {
	n := typeName(a.GetTypeUrl())
	if i := strings.LastIndex(n, "."); i >= 0 {
		n = n[i+1:]
	}
	m, err := a.UnmarshalNew()
	if err == nil {
		if f := m.ProtoReflect().Descriptor().Fields().ByName("name"); f != nil {
			if name := m.ProtoReflect().Get(f).String(); name != "" {
				return n + " " + name
			}
		}
	}
	return n
}

// walker visits a decoded message and everything inside it, Anys included: it runs the
// validation rules of each message (PGV does not look inside Anys), Envoy's load-time checks
// of HTTP connection managers, and collects moe plugin configs.
type walker struct {
	d         *doc
	bootstrap bool
	errs      ypath.Errors
	hcms      []hcmInfo
	// clusterRefs are clusters named by static route tables that validate clusters.
	clusterRefs []clusterRef
}

type clusterRef struct {
	name string
	at   ypath.Path
}

// hcmInfo is an HTTP connection manager's golang filters by name.
type hcmInfo struct {
	at     ypath.Path
	golang map[string]*golangv3alpha.Config
	names  map[string]bool
}

func (d *doc) walker() *walker { return &walker{d: d} }

func (w *walker) finish() { w.d.addErrs(&w.errs, Error, "") }

// message validates m (when validate is set; a MERGE patch value is partial) and walks it.
func (w *walker) message(p ypath.Path, m proto.Message, validate bool) {
	if validate {
		load.AddValidation(&w.errs, p, m)
	}
	w.hook(p, m)
	w.fields(p, m.ProtoReflect(), validate)
}

// opaque fields hold what Envoy does not interpret: the golang filter hands them to Go as
// they are (moe's plugin check reads them).
var opaque = map[protoreflect.FullName]bool{
	"envoy.extensions.filters.http.golang.v3alpha.Config.plugin_config": true,
	"envoy.extensions.filters.http.golang.v3alpha.RouterPlugin.config":  true,
}

func (w *walker) fields(p ypath.Path, r protoreflect.Message, validate bool) {
	r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || opaque[fd.FullName()] {
			return true
		}
		fp := p.Field(string(fd.Name()))
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() == nil {
				return true
			}
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				w.value(fp.Key(k.String()), mv.Message(), validate)
				return true
			})
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				w.value(fp.Index(i), l.Get(i).Message(), validate)
			}
		default:
			w.value(fp, v.Message(), validate)
		}
		return true
	})
}

func (w *walker) value(p ypath.Path, m protoreflect.Message, validate bool) {
	if a, ok := m.Interface().(*anypb.Any); ok {
		w.any(p, a)
		return
	}
	// Nested messages were validated with their parent (ValidateAll recurses); only the
	// hooks and the walk into Anys remain.
	w.hook(p, m.Interface())
	w.fields(p, m, validate)
}

// any decodes an Any and checks what is inside: Anys are always whole messages, so their
// rules run even inside a partial (MERGE) value.
func (w *walker) any(p ypath.Path, a *anypb.Any) {
	if a.GetTypeUrl() == "" {
		return
	}
	mt, err := envoytypes.Types().FindMessageByURL(a.GetTypeUrl())
	if err != nil {
		return // unknown or unlinked: reported while decoding
	}
	m := mt.New().Interface()
	if err := (proto.UnmarshalOptions{Resolver: envoytypes.Types()}).Unmarshal(a.GetValue(), m); err != nil {
		w.errs.Addf(p, "decode %s: %v", a.GetTypeUrl(), err)
		return
	}
	switch ts := m.(type) {
	case *xdstype.TypedStruct:
		if ts.GetTypeUrl() != "" {
			w.typedStruct(p, ts.GetTypeUrl(), ts.GetValue())
			return
		}
	case *udpatype.TypedStruct:
		if ts.GetTypeUrl() != "" {
			w.typedStruct(p, ts.GetTypeUrl(), ts.GetValue())
			return
		}
	}
	w.message(p, m, true)
}

// typedStruct checks a TypedStruct's value as the type it names, as Envoy converts it before
// handing it to the extension.
func (w *walker) typedStruct(p ypath.Path, url string, value *structpb.Struct) {
	mt, err := envoytypes.Types().FindMessageByURL(url)
	if err != nil {
		switch {
		case envoytypes.Unlinked(typeName(url)):
			w.d.warnf(p.Field("type_url"), "type %s is valid in Envoy but not linked into moectl: the TypedStruct's value is not checked", url)
		case strings.HasPrefix(typeName(url), "io.istio."):
			w.d.warnf(p.Field("type_url"), "type %s is an extension of Istio's proxy, not of upstream Envoy: not checked", url)
		default:
			w.errs.Addf(p.Field("type_url"), "unknown type %s: not an Envoy v1.39 (contrib) config type", url)
		}
		return
	}
	js, err := protojson.Marshal(value)
	if err != nil {
		w.errs.Addf(p.Field("value"), "%v", err)
		return
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		w.errs.Addf(p.Field("value"), "%v", err)
		return
	}
	m := mt.New().Interface()
	if !w.d.decode(p.Field("value"), tree, m) {
		return
	}
	w.message(p.Field("value"), m, true)
}

// hook runs the checks tied to a message type.
func (w *walker) hook(p ypath.Path, m proto.Message) {
	switch x := m.(type) {
	case *hcmv3.HttpConnectionManager:
		w.hcm(p, x)
	case *listenerv3.Filter:
		if t := anyType(x.GetTypedConfig()); strings.HasPrefix(t, "envoy.extensions.filters.http.") {
			w.errs.Addf(p.Field("typed_config"), "%s is an HTTP filter, not a network filter (put it in the http_filters of an http_connection_manager)", t)
		}
	case *golangv3alpha.Config:
		w.golang(p, x)
	case *golangv3alpha.ConfigsPerRoute:
		w.perRoute(p, x)
	case *routev3.RouteConfiguration:
		w.routeConfig(p, x)
	}
}

// anyType is the type an Any configures: a TypedStruct's inner type_url counts.
func anyType(a *anypb.Any) string {
	if a == nil {
		return ""
	}
	t := typeName(a.GetTypeUrl())
	switch t {
	case "xds.type.v3.TypedStruct":
		var ts xdstype.TypedStruct
		if a.UnmarshalTo(&ts) == nil && ts.GetTypeUrl() != "" {
			return typeName(ts.GetTypeUrl())
		}
	case "udpa.type.v1.TypedStruct":
		var ts udpatype.TypedStruct
		if a.UnmarshalTo(&ts) == nil && ts.GetTypeUrl() != "" {
			return typeName(ts.GetTypeUrl())
		}
	}
	return t
}

// hcm checks an HTTP connection manager's filter chain as Envoy does when it builds it.
func (w *walker) hcm(p ypath.Path, h *hcmv3.HttpConnectionManager) {
	info := hcmInfo{at: p, golang: map[string]*golangv3alpha.Config{}, names: map[string]bool{}}
	filters := h.GetHttpFilters()
	fp := p.Field("http_filters")
	for i, f := range filters {
		at := fp.Index(i)
		info.names[f.GetName()] = true
		tc := f.GetTypedConfig()
		if tc == nil && f.GetConfigDiscovery() == nil {
			if !f.GetIsOptional() {
				w.errs.Addf(at, "filter %q has no typed_config: Envoy finds an HTTP filter by the type of its typed_config, not by its name", f.GetName())
			}
			continue
		}
		t := anyType(tc)
		switch {
		case strings.HasPrefix(t, "envoy.extensions.filters.network."):
			w.errs.Addf(at.Field("typed_config"), "%s is a network filter, not an HTTP filter", t)
		case t == routerType && i != len(filters)-1:
			w.errs.Addf(at, "the router (%s) must be the last HTTP filter: Envoy refuses a terminal filter before others (here http_filters[%d] follows)", f.GetName(), i+1)
		case t != routerType && t != "" && i == len(filters)-1:
			w.errs.Addf(at, "the last HTTP filter must be the router (envoy.filters.http.router): Envoy refuses a chain that ends with the non-terminal filter %q", f.GetName())
		}
		if t == golangFilter {
			cfg := &golangv3alpha.Config{}
			if tc.UnmarshalTo(cfg) == nil {
				info.golang[f.GetName()] = cfg
			}
		}
	}
	w.hcms = append(w.hcms, info)
}

// golang collects the plugin config of a golang filter.
func (w *walker) golang(p ypath.Path, cfg *golangv3alpha.Config) {
	if w.bootstrap && !w.d.r.opts.SkipLibraryCheck && cfg.GetLibraryPath() != "" {
		if fi, err := os.Stat(cfg.GetLibraryPath()); err != nil || fi.IsDir() {
			w.d.warnf(p.Field("library_path"), "library %s does not exist here: Envoy loads it at start (a relative path is resolved against Envoy's working directory); --skip-library-check when validating elsewhere", cfg.GetLibraryPath())
		}
	}
	w.target(p.Field("plugin_config"), cfg.GetLibraryId(), cfg.GetPluginName(), false, cfg.GetPluginConfig())
}

func (w *walker) target(at ypath.Path, library, plugin string, perRoute bool, a *anypb.Any) {
	if library != pluginconfig.LibraryID {
		return
	}
	value := at.Field("value")
	if a == nil {
		value = at
	}
	w.d.r.targets = append(w.d.r.targets, &pluginTarget{d: w.d, at: at, value: value,
		tg: pluginconfig.Target{LibraryID: library, PluginName: plugin, PerRoute: perRoute, Config: a}})
}

// perRoute collects the per-route plugin configs of a ConfigsPerRoute. The golang filter it
// is for is the one named by its typed_per_filter_config key in the enclosing connection
// manager; when that is not in the same file (RDS route tables, EnvoyFilter route patches),
// a config for "moe" or a registered moe plugin is taken to be for the moe library.
func (w *walker) perRoute(p ypath.Path, cpr *golangv3alpha.ConfigsPerRoute) {
	key := perFilterKey(p)
	var filter *golangv3alpha.Config
	var hcm *hcmInfo
	for i := len(w.hcms) - 1; i >= 0; i-- {
		if p.HasPrefix(w.hcms[i].at) {
			hcm = &w.hcms[i]
			break
		}
	}
	if hcm != nil && key != "" {
		filter = hcm.golang[key]
		if filter == nil && !hcm.names[key] {
			w.d.warnf(p, "no HTTP filter named %q in this http_connection_manager: Envoy never uses this per-route config", key)
		}
	}
	for pn, rp := range cpr.GetPluginsConfig() {
		rpath := p.Field("plugins_config").Key(pn)
		library := pluginconfig.LibraryID
		if filter != nil {
			library = filter.GetLibraryId()
			if pn != filter.GetPluginName() {
				w.d.warnf(rpath, "filter %q has plugin_name %q: this entry is never used", key, filter.GetPluginName())
			}
		} else if !pluginconfig.Known(pn) {
			continue // another library's plugin
		}
		if rp.GetConfig() != nil {
			w.target(rpath.Field("config"), library, pn, true, rp.GetConfig())
		}
	}
}

// perFilterKey is the typed_per_filter_config key a per-route config is under.
func perFilterKey(p ypath.Path) string {
	segs := p.Segments()
	for i := len(segs) - 2; i >= 0; i-- {
		if !segs[i].IsIdx && (segs[i].Name == "typed_per_filter_config" || segs[i].Name == "typedPerFilterConfig") && segs[i+1].Quoted {
			return segs[i+1].Name
		}
	}
	return ""
}

// routeConfig collects the clusters a static route table names, which Envoy checks when
// validate_clusters is on (the default for a route_config inline in a static listener).
func (w *walker) routeConfig(p ypath.Path, rc *routev3.RouteConfiguration) {
	if !w.bootstrap || !p.HasPrefix(ypath.Path{}.Field("static_resources").Field("listeners")) {
		return
	}
	if vc := rc.GetValidateClusters(); vc != nil && !vc.GetValue() {
		return
	}
	for i, vh := range rc.GetVirtualHosts() {
		vp := p.Field("virtual_hosts").Index(i)
		for j, r := range vh.GetRoutes() {
			ra := r.GetRoute()
			if ra == nil {
				continue
			}
			rp := vp.Field("routes").Index(j).Field("route")
			if c := ra.GetCluster(); c != "" {
				w.clusterRefs = append(w.clusterRefs, clusterRef{c, rp.Field("cluster")})
			}
			for k, wc := range ra.GetWeightedClusters().GetClusters() {
				w.clusterRefs = append(w.clusterRefs, clusterRef{wc.GetName(), rp.Field("weighted_clusters").Field("clusters").Index(k).Field("name")})
			}
		}
	}
}
