package istio

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	xdstype "github.com/cncf/xds/go/xds/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	networking "istio.io/api/networking/v1alpha3"
	"sigs.k8s.io/yaml"
)

const wantLibraryPath = "/etc/moe/libgolang.so"

// docHeaders returns apiVersion/kind of every non-empty document of a file.
func docHeaders(t *testing.T, path string) [][2]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, doc := range docSep.Split(string(data), -1) {
		var h struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &h); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.APIVersion == "" && h.Kind == "" {
			continue
		}
		out = append(out, [2]string{h.APIVersion, h.Kind})
	}
	return out
}

type wantPatch struct {
	applyTo  networking.EnvoyFilter_ApplyTo
	op       networking.EnvoyFilter_Patch_Operation
	chain    []string // plugin names in order; "-name" for {name, disabled: true}
	disabled bool     // the whole moe plugin disabled on the route
}

func chainNames(c []PluginEntry) []string {
	out := []string{}
	for _, e := range c {
		if e.Disabled {
			out = append(out, "-"+e.Name)
		} else {
			out = append(out, e.Name)
		}
	}
	return out
}

func TestEnvoyFilterFiles(t *testing.T) {
	tests := []struct {
		file     string
		resource string
		context  networking.EnvoyFilter_PatchContext
		selector map[string]string
		patches  []wantPatch
	}{
		{
			file:     "envoyfilter-gateway.yaml",
			resource: "istio-system/moe-gateway",
			context:  networking.EnvoyFilter_GATEWAY,
			selector: map[string]string{"istio": "ingressgateway"},
			patches: []wantPatch{
				{applyTo: networking.EnvoyFilter_HTTP_FILTER, op: networking.EnvoyFilter_Patch_INSERT_BEFORE, chain: []string{"key-auth"}},
				{applyTo: networking.EnvoyFilter_HTTP_ROUTE, op: networking.EnvoyFilter_Patch_MERGE, chain: []string{"-key-auth"}},
			},
		},
		{
			file:     "envoyfilter-sidecar.yaml",
			resource: "demo/moe-sidecar",
			context:  networking.EnvoyFilter_SIDECAR_INBOUND,
			selector: map[string]string{"app": "httpbin"},
			patches: []wantPatch{
				{applyTo: networking.EnvoyFilter_HTTP_FILTER, op: networking.EnvoyFilter_Patch_INSERT_BEFORE, chain: []string{"key-auth"}},
				{applyTo: networking.EnvoyFilter_VIRTUAL_HOST, op: networking.EnvoyFilter_Patch_MERGE, chain: []string{"key-auth"}},
			},
		},
	}

	// Every EnvoyFilter file in this directory must be in the table.
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{"gateway-deployment-patch.yaml": true} // TestGatewayDeploymentPatch
	for _, tc := range tests {
		covered[tc.file] = true
	}
	for _, f := range files {
		if !covered[f] {
			t.Errorf("%s: not covered by a test table; add it", f)
		}
	}

	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			for _, h := range docHeaders(t, tc.file) {
				if h != [2]string{"networking.istio.io/v1alpha3", "EnvoyFilter"} {
					t.Errorf("document apiVersion/kind = %v, want networking.istio.io/v1alpha3 EnvoyFilter", h)
				}
			}
			got, err := LoadEnvoyFilters(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.patches) {
				t.Fatalf("%d golang patches, want %d", len(got), len(tc.patches))
			}
			for i, w := range tc.patches {
				p := got[i]
				if p.Resource != tc.resource || p.Context != tc.context || p.ApplyTo != w.applyTo || p.Operation != w.op {
					t.Errorf("patch %d: %s %s %s %s, want %s %s %s %s", i,
						p.Resource, p.Context, p.ApplyTo, p.Operation, tc.resource, tc.context, w.applyTo, w.op)
				}
				if !reflect.DeepEqual(p.WorkloadSelector, tc.selector) {
					t.Errorf("patch %d: workloadSelector %v, want %v", i, p.WorkloadSelector, tc.selector)
				}
				if p.MoeDisabled != w.disabled {
					t.Errorf("patch %d: moe disabled = %v, want %v", i, p.MoeDisabled, w.disabled)
				}
				if names := chainNames(p.Chain); !reflect.DeepEqual(names, w.chain) {
					t.Errorf("patch %d: chain %v, want %v", i, names, w.chain)
				}
				for _, e := range p.Chain {
					if !e.Disabled && !json.Valid(e.Config) {
						t.Errorf("patch %d: plugin %s: config is not valid JSON", i, e.Name)
					}
				}
				switch w.applyTo {
				case networking.EnvoyFilter_HTTP_FILTER:
					c := p.Config
					if c == nil {
						t.Fatalf("patch %d: no golang Config", i)
					}
					if c.GetPluginName() != MoePluginName || c.GetLibraryPath() != wantLibraryPath || c.GetLibraryId() == "" {
						t.Errorf("patch %d: plugin_name %q library_path %q library_id %q, want %q %q non-empty",
							i, c.GetPluginName(), c.GetLibraryPath(), c.GetLibraryId(), MoePluginName, wantLibraryPath)
					}
					sub := p.Match.GetListener().GetFilterChain().GetFilter()
					if sub.GetName() != "envoy.filters.network.http_connection_manager" ||
						sub.GetSubFilter().GetName() != "envoy.filters.http.router" {
						t.Errorf("patch %d: must match the router in the HTTP connection manager, got %v", i, sub)
					}
				default:
					if p.PerRoute == nil {
						t.Fatalf("patch %d: no golang ConfigsPerRoute", i)
					}
					if _, ok := p.PerRoute.GetPluginsConfig()[MoePluginName]; !ok {
						t.Errorf("patch %d: plugins_config has no %q entry", i, MoePluginName)
					}
				}
			}
		})
	}
}

// TestLoadEnvoyFiltersRejects edits the gateway file one way at a time and checks that the
// loader refuses each broken variant with a useful message, and accepts the harmless ones.
func TestLoadEnvoyFiltersRejects(t *testing.T) {
	base, err := os.ReadFile("envoyfilter-gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const deployment = "\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"
	tests := []struct {
		name    string
		old     string // replaced once in the gateway file; "" appends new instead
		new     string
		wantErr string // "" means the variant loads, with wantN golang patches
		wantN   int
	}{
		{"other kinds skipped", "", deployment, "", 2},
		{"empty documents skipped", "", "\n---\n# nothing\n---\n", "", 2},
		{"remove patch ignored", "", "\n---\n" + `apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: rm, namespace: istio-system}
spec:
  configPatches:
  - applyTo: HTTP_FILTER
    match: {context: GATEWAY}
    patch: {operation: REMOVE}
`, "", 2},
		{"wrong apiVersion", "apiVersion: networking.istio.io/v1alpha3", "apiVersion: networking.istio.io/v1beta1", "apiVersion", 0},
		{"unknown spec field", "configPatches:", "configPatchez:", "configPatchez", 0},
		{"unknown enum", "context: GATEWAY", "context: GATEWAYS", "GATEWAYS", 0},
		{"unknown golang field", "library_path:", "libary_path:", "libary_path", 0},
		{"missing plugin_name", "plugin_name: moe", "", "PluginName", 0},
		{"missing library_path", "library_path: /etc/moe/libgolang.so", "", "LibraryPath", 0},
		{"unknown Any type", "type.googleapis.com/xds.type.v3.TypedStruct\n            value:", "type.googleapis.com/xds.type.v3.TypedStructs\n            value:", "TypedStructs", 0},
		{"misspelled plugins key", "              plugins:\n              - name: key-auth", "              plugin:\n              - name: key-auth", `unknown field "plugin"`, 0},
		{"entry without name", "              - name: key-auth\n                config:", "              - config:", "name is empty", 0},
		{"top-level disabled", "              - name: key-auth\n                config:", "              - name: key-auth\n                disabled: true\n                config:", "only for per-route", 0},
		{"duplicate entry", "                    key: alice-demo-key   # illustrative\n", "                    key: alice-demo-key   # illustrative\n              - name: key-auth\n                config: {}\n", "listed twice", 0},
		{"per-route disabled with config", "disabled: true", "disabled: true\n                      config: {}", "disabled together with config", 0},
		{"per-route wrong type", "golang.v3alpha.ConfigsPerRoute", "golang.v3alpha.Config", `unknown field "plugins_config"`, 0},
		{"route value not a Route", "typed_per_filter_config:", "typed_per_filter_configs:", "typed_per_filter_configs", 0},
	}
	dir := t.TempDir()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc string
			if tc.old == "" {
				doc = string(base) + tc.new
			} else {
				if !strings.Contains(string(base), tc.old) {
					t.Fatalf("envoyfilter-gateway.yaml no longer contains %q; update this case", tc.old)
				}
				doc = strings.Replace(string(base), tc.old, tc.new, 1)
			}
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadEnvoyFilters(path)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("case %d: unexpected error: %v", i, err)
				}
				if len(got) != tc.wantN {
					t.Fatalf("case %d: %d patches, want %d", i, len(got), tc.wantN)
				}
				return
			}
			if err == nil {
				t.Fatalf("case %d: loaded; want an error containing %q", i, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("case %d: error %q does not contain %q", i, err, tc.wantErr)
			}
		})
	}
}

// TestGatewayDeploymentPatch checks the shape the EnvoyFilters rely on: an initContainer copying
// /moe/libgolang.so into an emptyDir that istio-proxy mounts at /etc/moe.
func TestGatewayDeploymentPatch(t *testing.T) {
	const file = "gateway-deployment-patch.yaml"
	hs := docHeaders(t, file)
	if len(hs) != 1 || hs[0] != [2]string{"apps/v1", "Deployment"} {
		t.Fatalf("documents %v, want one apps/v1 Deployment", hs)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	type mount struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
		ReadOnly  bool   `json:"readOnly"`
	}
	type container struct {
		Name         string   `json:"name"`
		Image        string   `json:"image"`
		Command      []string `json:"command"`
		VolumeMounts []mount  `json:"volumeMounts"`
	}
	var d struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			Template struct {
				Spec struct {
					InitContainers []container `json:"initContainers"`
					Containers     []container `json:"containers"`
					Volumes        []struct {
						Name     string          `json:"name"`
						EmptyDir json.RawMessage `json:"emptyDir"`
					} `json:"volumes"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Metadata.Name != "istio-ingressgateway" || d.Metadata.Namespace != "istio-system" {
		t.Errorf("patches %s/%s, want istio-system/istio-ingressgateway", d.Metadata.Namespace, d.Metadata.Name)
	}
	ps := d.Spec.Template.Spec
	volume := ""
	for _, v := range ps.Volumes {
		if len(v.EmptyDir) > 0 {
			volume = v.Name
		}
	}
	if volume == "" {
		t.Fatal("no emptyDir volume")
	}
	mountedAt := func(c container) string {
		for _, m := range c.VolumeMounts {
			if m.Name == volume {
				return m.MountPath
			}
		}
		return ""
	}
	if len(ps.InitContainers) != 1 {
		t.Fatalf("%d initContainers, want 1", len(ps.InitContainers))
	}
	ic := ps.InitContainers[0]
	dir := mountedAt(ic)
	cmd := strings.Join(ic.Command, " ")
	if ic.Image == "" || dir == "" || !strings.Contains(cmd, "/moe/libgolang.so") ||
		!strings.Contains(cmd, filepath.Join(dir, "libgolang.so")) {
		t.Errorf("initContainer %q must copy /moe/libgolang.so into the emptyDir (mounted at %q); command %q", ic.Name, dir, cmd)
	}
	var proxyMounts []string
	for _, c := range ps.Containers {
		if c.Name == "istio-proxy" {
			for _, m := range c.VolumeMounts {
				if m.Name == volume && m.ReadOnly {
					proxyMounts = append(proxyMounts, m.MountPath)
				}
			}
		}
	}
	sort.Strings(proxyMounts)
	if !reflect.DeepEqual(proxyMounts, []string{filepath.Dir(wantLibraryPath)}) {
		t.Errorf("istio-proxy read-only mounts of %s: %v, want [%s]", volume, proxyMounts, filepath.Dir(wantLibraryPath))
	}
}

func TestDecodeChainNeedsPluginsList(t *testing.T) {
	for _, tc := range []struct {
		value   map[string]any
		wantErr string
	}{
		{map[string]any{}, "no plugins list"},
		{map[string]any{"plugins": nil}, "no plugins list"},
		{map[string]any{"plugins": []any{}}, ""}, // an empty chain is allowed (the demo bootstrap has one)
		{map[string]any{"plugins": []any{map[string]any{"name": "key-auth", "config": "x"}}}, "config must be an object"},
		{map[string]any{"plugins": []any{map[string]any{"name": "key-auth"}}}, "no config"},
	} {
		v, err := structpb.NewStruct(tc.value)
		if err != nil {
			t.Fatal(err)
		}
		a, err := anypb.New(&xdstype.TypedStruct{Value: v})
		if err != nil {
			t.Fatal(err)
		}
		_, err = decodeChain(a, false)
		if tc.wantErr == "" && err != nil {
			t.Errorf("%v: %v", tc.value, err)
		} else if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%v: error %v, want %q", tc.value, err, tc.wantErr)
		}
	}
}
