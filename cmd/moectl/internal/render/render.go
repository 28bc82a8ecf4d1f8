// Package render turns a moe policy — which plugins, with which configs, for an Istio
// ingress gateway or a workload's sidecars, and per-route overrides — into the EnvoyFilter
// that configures them (`moectl render`). The EnvoyFilter has the same shape as
// istio/envoyfilter-gateway.yaml: the golang filter inserted before the router with the
// chain and its consumers, then one MERGE patch per route or virtual host override.
package render

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Policy is the input file.
type Policy struct {
	// Target is "gateway" (istio-ingressgateway, context GATEWAY) or "sidecar" (inbound
	// traffic of the selected workloads, context SIDECAR_INBOUND).
	Target string `yaml:"target"`
	// Name and Namespace of the EnvoyFilter. Name defaults to moe-<target>, Namespace to
	// istio-system for a gateway; a sidecar policy must name its workload's namespace.
	Name      string `yaml:"name"`
	Namespace string `yaml:"namespace"`
	// Selector is the workloadSelector's labels: default {istio: ingressgateway} for a
	// gateway; required for a sidecar.
	Selector map[string]string `yaml:"selector"`
	// Port limits the chain to one listener port (gateway) or inbound port (sidecar).
	Port uint32 `yaml:"port"`
	// LibraryPath is where libgolang.so is in istio-proxy (default /etc/moe/libgolang.so, as
	// the deployment patches mount it).
	LibraryPath string `yaml:"library_path"`
	// Plugins and Consumers are the moe chain: {name, config} entries and chain-level
	// consumers, as in a bootstrap's TypedStruct.
	Plugins   yaml.Node `yaml:"plugins"`
	Consumers yaml.Node `yaml:"consumers"`
	// Routes are per-route (or per virtual host) overrides.
	Routes []Route `yaml:"routes"`
}

// Route is one override: the plugins entries merged over the chain on that route.
type Route struct {
	// Route is the Envoy route name (a VirtualService http[].name; on a sidecar's inbound
	// port, istiod's route is "default").
	Route string `yaml:"route"`
	// VirtualHost is the Envoy virtual host ("*:80" for VirtualService hosts "*" on a
	// gateway's port 80). With no route, the override is for the whole virtual host.
	VirtualHost string `yaml:"vhost"`
	// Port is the route table's port (a sidecar's inbound port).
	Port    uint32    `yaml:"port"`
	Plugins yaml.Node `yaml:"plugins"`
}

// Error is a problem of the policy file at a line.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

var labelRE = regexp.MustCompile(`^([a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$`)
var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Parse reads a policy strictly (unknown fields are errors) and fills in the defaults.
func Parse(data []byte) (*Policy, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	p := &Policy{}
	if err := dec.Decode(p); err != nil {
		return nil, &Error{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	line := func(n *yaml.Node) int {
		if n != nil {
			return n.Line
		}
		return 0
	}
	switch p.Target {
	case "gateway":
		if p.Namespace == "" {
			p.Namespace = "istio-system"
		}
		if p.Selector == nil {
			p.Selector = map[string]string{"istio": "ingressgateway"}
		}
	case "sidecar":
		if p.Namespace == "" {
			return nil, &Error{Msg: "namespace is required for a sidecar policy (the namespace of the workloads it selects)"}
		}
		if len(p.Selector) == 0 {
			return nil, &Error{Msg: "selector is required for a sidecar policy (the workloads' labels)"}
		}
	case "":
		return nil, &Error{Msg: "target is required: gateway or sidecar"}
	default:
		return nil, &Error{Msg: fmt.Sprintf("target %q: want gateway or sidecar", p.Target)}
	}
	if p.Name == "" {
		p.Name = "moe-" + p.Target
	}
	if len(p.Name) > 253 || !nameRE.MatchString(p.Name) || !nameRE.MatchString(p.Namespace) {
		return nil, &Error{Msg: fmt.Sprintf("name %q / namespace %q: want lower case letters, digits and '-'", p.Name, p.Namespace)}
	}
	for k, v := range p.Selector {
		if !labelRE.MatchString(k) || (v != "" && !labelRE.MatchString(v)) {
			return nil, &Error{Msg: fmt.Sprintf("selector %s: %s: not a Kubernetes label", k, v)}
		}
	}
	if p.LibraryPath == "" {
		p.LibraryPath = "/etc/moe/libgolang.so"
	}
	if p.Plugins.Kind != yaml.SequenceNode || len(p.Plugins.Content) == 0 {
		return nil, &Error{Line: line(&p.Plugins), Msg: "plugins: want a list of {name, config} entries, at least one"}
	}
	if p.Consumers.Kind != 0 && p.Consumers.Kind != yaml.SequenceNode {
		return nil, &Error{Line: p.Consumers.Line, Msg: "consumers: want a list"}
	}
	for i, r := range p.Routes {
		if r.Route == "" && r.VirtualHost == "" {
			return nil, &Error{Line: line(&r.Plugins), Msg: fmt.Sprintf("routes[%d]: name a route, a vhost or both", i)}
		}
		if r.Plugins.Kind != yaml.SequenceNode || len(r.Plugins.Content) == 0 {
			return nil, &Error{Line: line(&r.Plugins), Msg: fmt.Sprintf("routes[%d].plugins: want a list of {name, config} or {name, disabled: true} entries", i)}
		}
	}
	return p, nil
}

// The EnvoyFilter, as YAML-tagged structs in the order Istio's docs write them.
type envoyFilter struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   metadata `yaml:"metadata"`
	Spec       spec     `yaml:"spec"`
}

type metadata struct {
	Name      string `yaml:"name"`
	Namespace string `yaml:"namespace"`
}

type spec struct {
	WorkloadSelector struct {
		Labels map[string]string `yaml:"labels"`
	} `yaml:"workloadSelector"`
	ConfigPatches []configPatch `yaml:"configPatches"`
}

type configPatch struct {
	ApplyTo string         `yaml:"applyTo"`
	Match   map[string]any `yaml:"match"`
	Patch   struct {
		Operation string `yaml:"operation"`
		Value     any    `yaml:"value"`
	} `yaml:"patch"`
}

const (
	golangConfig = "type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config"
	perRoute     = "type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute"
	typedStruct  = "type.googleapis.com/xds.type.v3.TypedStruct"
)

// Render writes the EnvoyFilter of p. source names the policy in the header comment.
func Render(p *Policy, source string) ([]byte, error) {
	ctx := "GATEWAY"
	if p.Target == "sidecar" {
		ctx = "SIDECAR_INBOUND"
	}
	ef := envoyFilter{APIVersion: "networking.istio.io/v1alpha3", Kind: "EnvoyFilter", Metadata: metadata{p.Name, p.Namespace}}
	ef.Spec.WorkloadSelector.Labels = p.Selector

	chain := ordered("plugins", &p.Plugins)
	if p.Consumers.Kind != 0 {
		chain = ordered("plugins", &p.Plugins, "consumers", &p.Consumers)
	}
	listener := map[string]any{"filterChain": map[string]any{"filter": map[string]any{
		"name":      "envoy.filters.network.http_connection_manager",
		"subFilter": map[string]any{"name": "envoy.filters.http.router"},
	}}}
	if p.Port != 0 {
		listener["portNumber"] = p.Port
	}
	filter := configPatch{ApplyTo: "HTTP_FILTER", Match: map[string]any{"context": ctx, "listener": listener}}
	filter.Patch.Operation = "INSERT_BEFORE"
	filter.Patch.Value = map[string]any{
		"name": "envoy.filters.http.golang",
		"typed_config": ordered(
			"@type", golangConfig,
			"library_id", "moe",
			"library_path", p.LibraryPath,
			"plugin_name", "moe",
			"plugin_config", ordered("@type", typedStruct, "value", chain),
		),
	}
	ef.Spec.ConfigPatches = append(ef.Spec.ConfigPatches, filter)

	for _, r := range p.Routes {
		rc := map[string]any{}
		vhost := map[string]any{}
		if r.VirtualHost != "" {
			vhost["name"] = r.VirtualHost
		}
		if r.Route != "" {
			vhost["route"] = map[string]any{"name": r.Route}
		}
		rc["vhost"] = vhost
		if r.Port != 0 {
			rc["portNumber"] = r.Port
		}
		cp := configPatch{ApplyTo: "HTTP_ROUTE", Match: map[string]any{"context": ctx, "routeConfiguration": rc}}
		if r.Route == "" {
			cp.ApplyTo = "VIRTUAL_HOST"
		}
		cp.Patch.Operation = "MERGE"
		cp.Patch.Value = map[string]any{"typed_per_filter_config": map[string]any{
			"envoy.filters.http.golang": ordered(
				"@type", perRoute,
				"plugins_config", map[string]any{"moe": map[string]any{
					"config": ordered("@type", typedStruct, "value", map[string]any{"plugins": &r.Plugins}),
				}},
			),
		}}
		ef.Spec.ConfigPatches = append(ef.Spec.ConfigPatches, cp)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "# Generated by `moectl render %s`: edit the policy and render again.\n", source)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(ef); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ordered is a mapping whose keys keep the given order ("@type" first, as people write it).
func ordered(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		var v yaml.Node
		switch x := kv[i+1].(type) {
		case *yaml.Node:
			v = *x
		default:
			if err := v.Encode(x); err != nil {
				panic(err)
			}
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: kv[i].(string)}, &v)
	}
	return n
}
