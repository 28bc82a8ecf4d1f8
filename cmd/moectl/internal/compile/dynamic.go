package compile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/load"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Filesystem xDS, as Envoy reads it (source/extensions/config_subscription/filesystem/
// filesystem_subscription_impl.cc): a config source names a file holding a DiscoveryResponse
// (resources as Any), re-read when a file is moved onto the path (or into watched_directory).
// moe-host reads those files through `moectl compile --lds/--cds/--rds FILE`, at start and
// at every reload, so it never decodes Envoy's protos itself.

// dynamicResources compiles dynamic_resources: LDS and CDS from files only.
func (c *compiler) dynamicResources(p ypath.Path, bs *bootstrapv3.Bootstrap) *bootstrap.DynamicResources {
	dr := bs.GetDynamicResources()
	if dr == nil {
		return nil
	}
	c.only(p, dr, "lds_config", "cds_config")
	out := &bootstrap.DynamicResources{}
	if cs := dr.GetLdsConfig(); cs != nil {
		out.LDS = c.configSource(p.Field("lds_config"), cs)
	}
	if cs := dr.GetCdsConfig(); cs != nil {
		out.CDS = c.configSource(p.Field("cds_config"), cs)
	}
	c.needsNode(p, bs)
	return out
}

// needsNode is Envoy's Config::Utility::checkLocalInfo, run for every xDS subscription
// (subscription_factory_impl.cc): node id and cluster must be set.
func (c *compiler) needsNode(p ypath.Path, bs *bootstrapv3.Bootstrap) {
	if c.nodeChecked {
		return
	}
	c.nodeChecked = true
	if bs.GetNode().GetId() == "" || bs.GetNode().GetCluster() == "" {
		c.errs.Addf(p, "an xDS subscription needs node.id and node.cluster (Envoy: \"node 'id' and 'cluster' are required\")")
	}
}

// configSource accepts a filesystem config source: path_config_source (path, watched_directory)
// or the deprecated path; resource_api_version V3 (the only one Envoy 1.39 has).
func (c *compiler) configSource(p ypath.Path, cs *corev3.ConfigSource) *bootstrap.ConfigSource {
	c.only(p, cs, "path_config_source", "path", "resource_api_version")
	out := &bootstrap.ConfigSource{}
	switch {
	case cs.GetPathConfigSource() != nil:
		pcs := cs.GetPathConfigSource()
		pp := p.Field("path_config_source")
		c.only(pp, pcs, "path", "watched_directory")
		out.Path = pcs.GetPath()
		if wd := pcs.GetWatchedDirectory(); wd != nil {
			c.only(pp.Field("watched_directory"), wd, "path", "watch_modify")
			out.WatchedDirectory = wd.GetPath()
			out.WatchModify = wd.GetWatchModify()
		}
	case cs.GetPath() != "": //nolint:staticcheck // the deprecated form Envoy still reads
		out.Path = cs.GetPath() //nolint:staticcheck
	default:
		c.errs.Addf(p, "moe-host reads xDS from files only (path_config_source)")
		return out
	}
	// subscription_factory_impl.cc: checkFilesystemSubscriptionBackingPath (a check that
	// touches this machine, skipped with the library check).
	if !c.opts.SkipLibraryCheck {
		if _, err := os.Stat(out.Path); err != nil {
			c.errs.Addf(p, "paths must refer to an existing path in the system: '%s' does not exist", out.Path)
		}
	}
	return out
}

// rds compiles an http connection manager's rds.
func (c *compiler) rds(p ypath.Path, r *hcmv3.Rds) *bootstrap.RDS {
	c.only(p, r, "config_source", "route_config_name")
	out := &bootstrap.RDS{RouteConfigName: r.GetRouteConfigName()}
	if cs := r.GetConfigSource(); cs != nil {
		out.ConfigSource = *c.configSource(p.Field("config_source"), cs)
	}
	if c.bootstrapProto != nil {
		c.needsNode(p, c.bootstrapProto)
	}
	return out
}

// Resource kinds of `moectl compile --lds/--cds/--rds`.
const (
	KindLDS = "lds"
	KindCDS = "cds"
	KindRDS = "rds"
)

var kindType = map[string]string{
	KindLDS: "type.googleapis.com/envoy.config.listener.v3.Listener",
	KindCDS: "type.googleapis.com/envoy.config.cluster.v3.Cluster",
	KindRDS: "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
}

// ErrUnreadable wraps the errors of a resource file that could not be read or parsed at all
// (Envoy counts those as update_failure; everything else is update_rejected).
var ErrUnreadable = errors.New("unreadable")

// ResourcesFile compiles one xDS resource file of the given kind in the context of the
// bootstrap bs (its secrets and node). Problems are a ypath.List; a file that cannot be read
// or parsed wraps ErrUnreadable.
func ResourcesFile(bs *bootstrapv3.Bootstrap, kind, path string, opts Options) (*bootstrap.Resources, error) {
	want, ok := kindType[kind]
	if !ok {
		return nil, fmt.Errorf("unknown resource kind %q (lds, cds or rds)", kind)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	resp, err := decodeDiscoveryResponse(path, data)
	if err != nil {
		return nil, err
	}
	c := &compiler{opts: opts, secrets: map[string][]byte{}, clusters: map[string]bool{}, bootstrapProto: bs,
		cds: bs.GetDynamicResources().GetCdsConfig() != nil}
	if kind != KindCDS {
		for _, cl := range bs.GetStaticResources().GetClusters() {
			c.clusters[cl.GetName()] = true
		}
	}
	for i, s := range bs.GetStaticResources().GetSecrets() {
		c.secret(ypath.Path{}.Field("static_resources").Field("secrets").Index(i), s)
	}
	out := &bootstrap.Resources{VersionInfo: resp.GetVersionInfo()}
	switch kind {
	case KindLDS:
		out.Listeners = []bootstrap.Listener{}
	case KindCDS:
		out.Clusters = []bootstrap.Cluster{}
	case KindRDS:
		out.RouteConfigs = []bootstrap.RouteConfiguration{}
	}
	names := map[string]int{}
	for i, a := range resp.GetResources() {
		rp := ypath.Path{}.Field("resources").Index(i)
		if a.GetTypeUrl() != want {
			// The resource decoder unpacks into the subscription's type (decoded_resource_impl.h).
			c.errs.Addf(rp.Field("@type"), "a %s file holds %s resources, not %s", strings.ToUpper(kind), want, a.GetTypeUrl())
			continue
		}
		m, ok := c.unpack(rp, a)
		if !ok {
			continue
		}
		hash := protoHash(m)
		var name string
		switch r := m.(type) {
		case *listenerv3.Listener:
			name = r.GetName()
			l := c.listener(rp, r)
			l.Hash = hash
			l.Dump = resourceDump(r)
			if rc := inlineRouteConfig(r); rc != nil {
				l.RouteConfigDump = resourceDump(rc)
			}
			out.Listeners = append(out.Listeners, l)
		case *clusterv3.Cluster:
			name = r.GetName()
			if cl, ok := c.cluster(rp, r); ok {
				cl.Hash = hash
				cl.Dump = resourceDump(r)
				out.Clusters = append(out.Clusters, cl)
			}
		case *routev3.RouteConfiguration:
			name = r.GetName()
			// RDS route tables are not bound to one connection manager; validate_clusters
			// defaults to false for them (route.proto).
			rc := c.routeConfig(rp, r, nil)
			rc.Hash = hash
			rc.Dump = resourceDump(r)
			out.RouteConfigs = append(out.RouteConfigs, rc)
		}
		if j, dup := names[name]; dup {
			c.errs.Addf(rp.Field("name"), "duplicate resource name %q (resources[%d])", name, j)
		}
		names[name] = i
	}
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeDiscoveryResponse reads the file the way Envoy's MessageUtil::loadFromFile does: by
// extension, .yaml/.yml as YAML and anything else as JSON (.pb and .pb_text are not read by
// moe-host); strictly (unknown fields are errors).
func decodeDiscoveryResponse(path string, data []byte) (*discoveryv3.DiscoveryResponse, error) {
	lower := strings.ToLower(path)
	var js []byte
	switch {
	case strings.HasSuffix(lower, ".pb") || strings.HasSuffix(lower, ".pb_text"):
		var errs ypath.Errors
		errs.Addf(ypath.Path{}, "binary and text protobuf resource files are not supported by moe-host (use .yaml or .json)")
		return nil, errs.Err()
	case strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml"):
		var err error
		js, err = yaml.YAMLToJSONStrict(data)
		if err != nil {
			return nil, fmt.Errorf("%w: parse yaml: %v", ErrUnreadable, err)
		}
	default:
		js = data
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("%w: parse json: %v", ErrUnreadable, err)
	}
	if tree == nil {
		return nil, fmt.Errorf("%w: the file is empty", ErrUnreadable)
	}
	resp := &discoveryv3.DiscoveryResponse{}
	var errs ypath.Errors
	d := &load.Decoder{}
	if !d.Decode(&errs, ypath.Path{}, tree, resp) {
		return nil, errs.Err()
	}
	load.AddValidation(&errs, ypath.Path{}, resp)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return resp, nil
}

// protoHash stands for Envoy's MessageUtil::hash of a resource: equal protos, equal hashes.
func protoHash(m proto.Message) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
