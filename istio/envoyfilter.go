// Package istio holds moe's Istio deployment files (EnvoyFilters and the gateway deployment
// patch) and a loader that checks EnvoyFilter files offline with the real Istio and Envoy protos,
// so the files here and users' own files (via moectl) fail before they reach a cluster.
package istio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"

	xdstype "github.com/cncf/xds/go/xds/type/v3"
	golangv3 "github.com/envoyproxy/go-control-plane/contrib/envoy/extensions/filters/http/golang/v3alpha"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
	"sigs.k8s.io/yaml"
)

const (
	// GolangFilterName is the HTTP filter name the golang filter is inserted under; per-route
	// config is looked up in typed_per_filter_config under the same name.
	GolangFilterName = "envoy.filters.http.golang"
	// MoePluginName is the golang plugin_name of the moe framework.
	MoePluginName = "moe"

	envoyFilterAPIVersion = "networking.istio.io/v1alpha3"
	envoyFilterKind       = "EnvoyFilter"
)

// PluginEntry is one element of moe's ordered plugin chain ({name, config} or, on a route,
// {name, disabled: true}). Config is kept as raw JSON for the plugin's own strict decoder.
type PluginEntry struct {
	Name     string
	Config   json.RawMessage
	Disabled bool
}

// GolangPatch is one EnvoyFilter config patch that configures the golang filter, decoded into
// Envoy's protos and validated with their protoc-gen-validate rules.
type GolangPatch struct {
	File     string // file it was read from
	Resource string // "namespace/name" of the EnvoyFilter
	Index    int    // position in spec.configPatches
	ApplyTo  networking.EnvoyFilter_ApplyTo
	Context  networking.EnvoyFilter_PatchContext

	Operation        networking.EnvoyFilter_Patch_Operation
	Match            *networking.EnvoyFilter_EnvoyConfigObjectMatch
	WorkloadSelector map[string]string // spec.workloadSelector.labels; nil selects every proxy in scope

	// Config is set for an HTTP_FILTER patch adding the golang filter.
	Config *golangv3.Config
	// PerRoute is set for an HTTP_ROUTE, VIRTUAL_HOST or ROUTE_CONFIGURATION patch whose
	// typed_per_filter_config has an entry for the golang filter.
	PerRoute *golangv3.ConfigsPerRoute

	// Chain is moe's plugin list: from Config.plugin_config when plugin_name is moe, or from
	// PerRoute.plugins_config["moe"].config. Nil when neither is about moe.
	Chain []PluginEntry
	// MoeDisabled is true when the route patch disables the moe plugin as a whole.
	MoeDisabled bool
}

// LoadEnvoyFilters reads a YAML file of one or more documents and returns the golang-filter
// patches of its EnvoyFilters. Documents of other kinds are skipped. Decoding is strict: unknown
// fields, unknown Any types and failed validation rules are errors, as in istiod and Envoy.
func LoadEnvoyFilters(path string) ([]GolangPatch, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []GolangPatch
	for i, doc := range docSep.Split(string(data), -1) {
		ps, err := loadDoc(path, []byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		out = append(out, ps...)
	}
	return out, nil
}

// docSep matches a YAML document separator line.
var docSep = regexp.MustCompile(`(?m)^---[ \t]*\r?$`)

// header is the Kubernetes envelope of a document.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
}

func loadDoc(path string, doc []byte) ([]GolangPatch, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("parse yaml: %w", err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil // empty document (comments only)
	}
	var h header
	if err := json.Unmarshal(js, &h); err != nil {
		return nil, fmt.Errorf("parse object: %w", err)
	}
	if h.Kind != envoyFilterKind {
		return nil, nil
	}
	if h.APIVersion != envoyFilterAPIVersion {
		return nil, fmt.Errorf("EnvoyFilter: apiVersion %q, want %q", h.APIVersion, envoyFilterAPIVersion)
	}
	if h.Metadata.Name == "" {
		return nil, errors.New("EnvoyFilter: metadata.name is empty")
	}
	resource := h.Metadata.Namespace + "/" + h.Metadata.Name
	if len(h.Spec) == 0 {
		return nil, fmt.Errorf("EnvoyFilter %s: no spec", resource)
	}
	ef := &networking.EnvoyFilter{}
	if err := protojson.Unmarshal(h.Spec, ef); err != nil {
		return nil, fmt.Errorf("EnvoyFilter %s: spec: %w", resource, err)
	}
	var out []GolangPatch
	for i, cp := range ef.GetConfigPatches() {
		gp := GolangPatch{
			File: path, Resource: resource, Index: i,
			ApplyTo: cp.GetApplyTo(), Context: cp.GetMatch().GetContext(),
			Operation: cp.GetPatch().GetOperation(), Match: cp.GetMatch(),
			WorkloadSelector: ef.GetWorkloadSelector().GetLabels(),
		}
		ok, err := decodePatch(&gp, cp.GetPatch().GetValue())
		if err != nil {
			return nil, fmt.Errorf("EnvoyFilter %s: configPatches[%d] (%s): %w", resource, i, gp.ApplyTo, err)
		}
		if ok {
			out = append(out, gp)
		}
	}
	return out, nil
}

// decodePatch fills gp from a patch value; it reports false for patches that do not configure
// the golang filter (they are not decoded further).
func decodePatch(gp *GolangPatch, value *structpb.Struct) (bool, error) {
	if value == nil {
		return false, nil // REMOVE and the like carry no value
	}
	js, err := protojson.Marshal(value)
	if err != nil {
		return false, err
	}
	var perFilter map[string]*anypb.Any
	switch gp.ApplyTo {
	case networking.EnvoyFilter_HTTP_FILTER:
		f := &hcmv3.HttpFilter{}
		if err := protojson.Unmarshal(js, f); err != nil {
			return false, fmt.Errorf("value as HttpFilter: %w", err)
		}
		tc := f.GetTypedConfig()
		if f.GetName() != GolangFilterName && !isType(tc, &golangv3.Config{}) {
			return false, nil
		}
		if err := f.ValidateAll(); err != nil {
			return false, fmt.Errorf("HttpFilter: %w", err)
		}
		if tc == nil {
			return false, fmt.Errorf("filter %s has no typed_config", f.GetName())
		}
		cfg := &golangv3.Config{}
		if err := unpack(tc, cfg); err != nil {
			return false, err
		}
		if err := cfg.ValidateAll(); err != nil {
			return false, fmt.Errorf("golang Config: %w", err)
		}
		gp.Config = cfg
		if cfg.GetPluginName() == MoePluginName {
			chain, err := decodeChain(cfg.GetPluginConfig(), false)
			if err != nil {
				return false, fmt.Errorf("plugin_config: %w", err)
			}
			gp.Chain = chain
		}
		return true, nil
	// A MERGE value is a partial message (no match, no action, no domains), so only its
	// decoding is checked, not the validation rules of the whole route or virtual host.
	case networking.EnvoyFilter_HTTP_ROUTE:
		m := &routev3.Route{}
		if err := protojson.Unmarshal(js, m); err != nil {
			return false, fmt.Errorf("value as Route: %w", err)
		}
		perFilter = m.GetTypedPerFilterConfig()
	case networking.EnvoyFilter_VIRTUAL_HOST:
		m := &routev3.VirtualHost{}
		if err := protojson.Unmarshal(js, m); err != nil {
			return false, fmt.Errorf("value as VirtualHost: %w", err)
		}
		perFilter = m.GetTypedPerFilterConfig()
	case networking.EnvoyFilter_ROUTE_CONFIGURATION:
		m := &routev3.RouteConfiguration{}
		if err := protojson.Unmarshal(js, m); err != nil {
			return false, fmt.Errorf("value as RouteConfiguration: %w", err)
		}
		perFilter = m.GetTypedPerFilterConfig()
	default:
		return false, nil
	}
	a, found := perFilter[GolangFilterName]
	if !found {
		return false, nil
	}
	// typed_per_filter_config may wrap the config in envoy.config.route.v3.FilterConfig.
	if isType(a, &routev3.FilterConfig{}) {
		fc := &routev3.FilterConfig{}
		if err := unpack(a, fc); err != nil {
			return false, err
		}
		a = fc.GetConfig()
	}
	pr := &golangv3.ConfigsPerRoute{}
	if err := unpack(a, pr); err != nil {
		return false, fmt.Errorf("typed_per_filter_config[%s]: %w", GolangFilterName, err)
	}
	if err := pr.ValidateAll(); err != nil {
		return false, fmt.Errorf("golang ConfigsPerRoute: %w", err)
	}
	gp.PerRoute = pr
	if rp, ok := pr.GetPluginsConfig()[MoePluginName]; ok {
		if rp.GetDisabled() {
			gp.MoeDisabled = true
		} else {
			chain, err := decodeChain(rp.GetConfig(), true)
			if err != nil {
				return false, fmt.Errorf("plugins_config.%s.config: %w", MoePluginName, err)
			}
			gp.Chain = chain
		}
	}
	return true, nil
}

func isType(a *anypb.Any, m proto.Message) bool {
	return a != nil && a.MessageIs(m)
}

func unpack(a *anypb.Any, m proto.Message) error {
	if a == nil {
		return fmt.Errorf("missing config of type %s", m.ProtoReflect().Descriptor().FullName())
	}
	if !a.MessageIs(m) {
		return fmt.Errorf("type %q, want %s", a.GetTypeUrl(), m.ProtoReflect().Descriptor().FullName())
	}
	return a.UnmarshalTo(m)
}

// decodeChain reads moe's plugin list out of an xds.type.v3.TypedStruct. perRoute allows
// {name, disabled: true} entries.
func decodeChain(a *anypb.Any, perRoute bool) ([]PluginEntry, error) {
	ts := &xdstype.TypedStruct{}
	if err := unpack(a, ts); err != nil {
		return nil, err
	}
	if err := ts.ValidateAll(); err != nil {
		return nil, err
	}
	js, err := protojson.Marshal(ts.GetValue())
	if err != nil {
		return nil, err
	}
	var v struct {
		Plugins *[]struct {
			Name     string          `json:"name"`
			Config   json.RawMessage `json:"config"`
			Disabled *bool           `json:"disabled"`
		} `json:"plugins"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	if v.Plugins == nil {
		return nil, errors.New("value has no plugins list")
	}
	chain := make([]PluginEntry, 0, len(*v.Plugins))
	seen := map[string]bool{}
	for i, p := range *v.Plugins {
		where := fmt.Sprintf("plugins[%d]", i)
		if p.Name == "" {
			return nil, fmt.Errorf("%s: name is empty", where)
		}
		where += " (" + p.Name + ")"
		if seen[p.Name] {
			return nil, fmt.Errorf("%s: listed twice (entries merge by name)", where)
		}
		seen[p.Name] = true
		hasConfig := len(p.Config) > 0 && string(p.Config) != "null"
		if hasConfig && p.Config[0] != '{' {
			return nil, fmt.Errorf("%s: config must be an object", where)
		}
		e := PluginEntry{Name: p.Name, Config: p.Config}
		if p.Disabled != nil {
			switch {
			case !perRoute:
				return nil, fmt.Errorf("%s: disabled is only for per-route config; leave the plugin out instead", where)
			case !*p.Disabled:
				return nil, fmt.Errorf("%s: disabled: false has no meaning; leave it out", where)
			case hasConfig:
				return nil, fmt.Errorf("%s: disabled together with config", where)
			}
			e.Disabled = true
		} else if !hasConfig {
			return nil, fmt.Errorf("%s: no config", where)
		}
		chain = append(chain, e)
	}
	return chain, nil
}
