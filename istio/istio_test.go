package istio_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	golangv3alpha "github.com/envoyproxy/go-control-plane/contrib/envoy/extensions/filters/http/golang/v3alpha"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	networking "istio.io/api/networking/v1alpha3"
	"sigs.k8s.io/yaml"

	"github.com/moeproxy/moe/cmd/moectl/validate"
	"github.com/moeproxy/moe/istio"
)

// How each file of istio/ is checked here (and by istiodcheck, which feeds them to istiod).
var files = map[string]string{
	"demo.yaml":                              "validate",
	"envoyfilter-gateway.yaml":               "validate",
	"envoyfilter-sidecar.yaml":               "validate",
	"gateway-deployment-patch.yaml":          "deployment-patch",
	"gateway-deployment-patch-hostpath.yaml": "deployment-patch",
	"sidecar-deployment-patch.yaml":          "deployment-patch",
	"moe-node-installer.yaml":                "daemonset",
	"helm-values-gateway.yaml":               "helm-values",
	"istiooperator-gateway.yaml":             "istiooperator",
	"policy-gateway.yaml":                    "policy", // cmd/moectl renders it (TestRenderGatewayPolicy)
}

// Every YAML file under istio/ is in the table (so none escapes the checks).
func TestEveryFileIsChecked(t *testing.T) {
	var found []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".yaml") && !strings.HasPrefix(p, "istiodcheck/") {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if _, ok := files[f]; !ok {
			t.Errorf("%s is not in the test's table", f)
		}
	}
	if len(found) != len(files) {
		t.Errorf("found %v, the table has %d files", found, len(files))
	}
}

// moectl validate accepts the Istio files: no error, no warning.
func TestFilesValidate(t *testing.T) {
	var names []string
	for f, how := range files {
		if how == "validate" {
			names = append(names, f)
		}
	}
	sort.Strings(names)
	rep := validate.Files(names, validate.Options{})
	for _, fr := range rep.Files {
		for _, f := range fr.Findings {
			t.Errorf("%s", f)
		}
	}
	byFile := map[string]*validate.FileResult{}
	for _, fr := range rep.Files {
		byFile[fr.File] = fr
	}
	if n := byFile["envoyfilter-gateway.yaml"].PluginConfigs; n != 2 {
		t.Errorf("gateway: %d plugin configs checked, want 2", n)
	}
	if got := strings.Join(byFile["demo.yaml"].Checked, ","); got != "Gateway istio-system/public-gateway,VirtualService demo/httpbin" {
		t.Errorf("demo.yaml: checked %s", got)
	}
}

type efDoc struct {
	ef     *networking.EnvoyFilter
	values []proto.Message
}

// loadEnvoyFilter decodes an EnvoyFilter file with Istio's and Envoy's protos, strictly.
func loadEnvoyFilter(t *testing.T, file string) efDoc {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Spec       json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(js, &obj); err != nil || obj.Kind != "EnvoyFilter" || obj.APIVersion != "networking.istio.io/v1alpha3" {
		t.Fatalf("%s: %v %+v", file, err, obj)
	}
	d := efDoc{ef: &networking.EnvoyFilter{}}
	if err := protojson.Unmarshal(obj.Spec, d.ef); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for i, cp := range d.ef.GetConfigPatches() {
		v := istio.NewPatchValue(cp.GetApplyTo())
		b, _ := protojson.Marshal(cp.GetPatch().GetValue())
		if err := protojson.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: configPatches[%d]: %v", file, i, err)
		}
		d.values = append(d.values, v)
	}
	return d
}

func hcmOf(t *testing.T, l *listenerv3.Listener) *hcmv3.HttpConnectionManager {
	t.Helper()
	h := &hcmv3.HttpConnectionManager{}
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(h); err != nil {
		t.Fatal(err)
	}
	return h
}

func filterNames(h *hcmv3.HttpConnectionManager) []string {
	var out []string
	for _, f := range h.GetHttpFilters() {
		out = append(out, f.GetName())
	}
	return out
}

func route(rc *routev3.RouteConfiguration, vh, name string) *routev3.Route {
	for _, v := range rc.GetVirtualHosts() {
		if v.GetName() != vh {
			continue
		}
		for _, r := range v.GetRoutes() {
			if r.GetName() == name {
				return r
			}
		}
	}
	return nil
}

// xdsFile writes a listener and a route table as an xDS resource file for moectl validate.
func xdsFile(t *testing.T, msgs ...proto.Message) []byte {
	t.Helper()
	var res []json.RawMessage
	for _, m := range msgs {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		b, err := protojson.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, b)
	}
	out, _ := json.Marshal(map[string]any{"resources": res})
	return out
}

// Applied the way istiod applies them to a representative gateway with the demo's routes,
// the gateway EnvoyFilter gives: the golang filter right before the router, the healthz route
// with both auth plugins off, the default route untouched; and Envoy's protos and moe's plugin
// check accept the resulting listener and routes.
func TestGatewayPatchesApplied(t *testing.T) {
	d := loadEnvoyFilter(t, "envoyfilter-gateway.yaml")
	res := istio.Apply(istio.Gateway, d.ef, d.values, "healthz", "default")
	for _, p := range res.Problems {
		t.Errorf("patch %d: %s", p.Patch, p.Message)
	}
	h := hcmOf(t, res.Listener)
	if got := strings.Join(filterNames(h), ","); got != "envoy.filters.http.fault,envoy.filters.http.cors,envoy.filters.http.golang,envoy.filters.http.router" {
		t.Errorf("filters %s", got)
	}
	cfg := &golangv3alpha.Config{}
	if err := h.GetHttpFilters()[2].GetTypedConfig().UnmarshalTo(cfg); err != nil || cfg.GetLibraryPath() != istio.LibraryPath || cfg.GetPluginName() != "moe" {
		t.Errorf("golang filter %v: %v", cfg, err)
	}
	healthz := route(res.Routes, "*:80", "healthz")
	if healthz == nil || healthz.GetTypedPerFilterConfig()[istio.GolangFilterName] == nil {
		t.Fatalf("healthz route %v", healthz)
	}
	if def := route(res.Routes, "*:80", "default"); len(def.GetTypedPerFilterConfig()) != 0 {
		t.Errorf("default route got %v", def.GetTypedPerFilterConfig())
	}
	checkXDS(t, 2, res.Listener, res.Routes)
}

func checkXDS(t *testing.T, pluginConfigs int, msgs ...proto.Message) {
	t.Helper()
	rep := validate.Bytes("generated.json", xdsFile(t, msgs...), validate.Options{})
	fr := rep.Files[0]
	for _, f := range fr.Findings {
		t.Errorf("generated config: %s", f)
	}
	if fr.PluginConfigs != pluginConfigs {
		t.Errorf("generated config: %d plugin configs checked, want %d", fr.PluginConfigs, pluginConfigs)
	}
}

// The sidecar EnvoyFilter on a representative inbound listener (port 8080, istiod's route
// "default" in the route table "inbound|8080||").
func TestSidecarPatchesApplied(t *testing.T) {
	d := loadEnvoyFilter(t, "envoyfilter-sidecar.yaml")
	res := istio.Apply(istio.SidecarInbound, d.ef, d.values, "default")
	for _, p := range res.Problems {
		t.Errorf("patch %d: %s", p.Patch, p.Message)
	}
	if got := strings.Join(filterNames(hcmOf(t, res.Listener)), ","); got != "envoy.filters.http.fault,envoy.filters.http.cors,envoy.filters.http.golang,envoy.filters.http.router" {
		t.Errorf("filters %s", got)
	}
	if r := route(res.Routes, istio.SidecarInbound.VirtualHostName(), "default"); r.GetTypedPerFilterConfig()[istio.GolangFilterName] == nil {
		t.Errorf("default route %v", r)
	}
	checkXDS(t, 2, res.Listener) // the inbound route table is inline
	// The gateway EnvoyFilter's patches do not touch a sidecar, and the other way round.
	g := loadEnvoyFilter(t, "envoyfilter-gateway.yaml")
	if res := istio.Apply(istio.SidecarInbound, g.ef, g.values, "default"); res.Applied[0]+res.Applied[1] != 0 {
		t.Errorf("gateway patches applied to a sidecar: %v", res.Applied)
	}
}

func mustRead(t *testing.T, f string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	return m
}

func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func named(list any, name string) map[string]any {
	l, _ := list.([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

// The shape every way of mounting the library shares: the .so at /etc/moe/libgolang.so in
// istio-proxy, read-only; the istiodcheck module checks the same files with Kubernetes' types
// and istio's own chart and manifest renderer.
func TestMountVariants(t *testing.T) {
	for f, how := range files {
		var podSpec, proxyMounts any
		m := mustRead(t, f)
		switch how {
		case "deployment-patch":
			podSpec = dig(m, "spec", "template", "spec")
			proxyMounts = dig(named(dig(podSpec, "containers"), "istio-proxy"), "volumeMounts")
			if f == "sidecar-deployment-patch.yaml" {
				ann, _ := dig(m, "spec", "template", "metadata", "annotations", "sidecar.istio.io/userVolumeMount").(string)
				if err := json.Unmarshal([]byte(ann), &proxyMounts); err != nil {
					t.Errorf("%s: userVolumeMount annotation: %v", f, err)
				}
			}
		case "helm-values":
			podSpec, proxyMounts = m, m["volumeMounts"]
		case "istiooperator":
			byPath := map[string]any{}
			patches, _ := dig(m, "spec", "components", "ingressGateways", 0, "k8s", "overlays", 0, "patches").([]any)
			for _, p := range patches {
				byPath[dig(p, "path").(string)] = dig(p, "value")
			}
			podSpec = map[string]any{"volumes": []any{byPath["spec.template.spec.volumes[-1]"]}, "initContainers": byPath["spec.template.spec.initContainers"]}
			proxyMounts = []any{byPath["spec.template.spec.containers.[name:istio-proxy].volumeMounts[-1]"]}
		default:
			continue
		}
		mount := named(proxyMounts, "moe-lib")
		if mount == nil || mount["mountPath"] != "/etc/moe" || mount["readOnly"] != true {
			t.Errorf("%s: istio-proxy mount %v", f, mount)
		}
		vol := named(dig(podSpec, "volumes"), "moe-lib")
		if vol == nil {
			t.Errorf("%s: no volume moe-lib", f)
			continue
		}
		if hp := dig(vol, "hostPath", "path"); hp != nil {
			if hp != "/opt/moe" {
				t.Errorf("%s: hostPath %v", f, hp)
			}
			continue
		}
		init := named(dig(podSpec, "initContainers"), "moe-libgolang")
		cmd, _ := json.Marshal(dig(init, "command"))
		if dig(vol, "emptyDir") == nil || string(cmd) != `["cp","/moe/libgolang.so","/etc/moe/libgolang.so"]` ||
			dig(named(dig(init, "volumeMounts"), "moe-lib"), "mountPath") != "/etc/moe" {
			t.Errorf("%s: emptyDir %v, init container %v", f, vol, init)
		}
	}
	ds := mustRead(t, "moe-node-installer.yaml")
	script, _ := json.Marshal(dig(ds, "spec", "template", "spec", "containers", 0, "command"))
	if !strings.Contains(string(script), "/host/opt/moe/libgolang.so") || dig(named(dig(ds, "spec", "template", "spec", "volumes"), "host-moe"), "hostPath", "path") != "/opt/moe" {
		t.Errorf("installer %s", script)
	}
}

// The configs a new user would have pasted before, and other mistakes, are refused with a
// message that says what is wrong and where.
func TestBrokenEnvoyFiltersAreRefused(t *testing.T) {
	good, err := os.ReadFile("envoyfilter-gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, old, new string
		want           string
	}{
		{"key-auth fields that do not exist", `config:
                  sources: ["header:x-api-key"]
                  hide_credentials: true`, `config:
                  header: x-api-key
                  keys: [{consumer: alice, key: alice-demo-key}]`,
			`in.yaml:55:19: error: EnvoyFilter istio-system/moe-gateway: spec.configPatches[0].patch.value.typed_config.plugin_config.value.plugins[1].config.header: invalid config of plugin "key-auth": field header: unknown field`},
		{"wrong apiVersion", "networking.istio.io/v1alpha3", "networking.istio.io/v1",
			`in.yaml:14:1: error: EnvoyFilter istio-system/moe-gateway: apiVersion: EnvoyFilter is not served as networking.istio.io/v1 (versions: v1alpha3)`},
		{"unknown EnvoyFilter field", "  workloadSelector:", "  workloadSelectr:",
			`in.yaml:20:3: error: EnvoyFilter istio-system/moe-gateway: spec.workloadSelectr: unknown field "workloadSelectr" in istio.networking.v1alpha3.EnvoyFilter`},
		{"ADD puts the filter after the router", "operation: INSERT_BEFORE", "operation: ADD",
			`error: EnvoyFilter istio-system/moe-gateway: spec.configPatches[0]: after the patches, "envoy.filters.http.golang" follows the router: Envoy refuses a filter chain whose router is not last`},
		{"unknown golang field", "library_id: moe", "library_idd: moe",
			`spec.configPatches[0].patch.value.typed_config.library_idd: unknown field "library_idd" in envoy.extensions.filters.http.golang.v3alpha.Config`},
		{"route patch with a listener match", `      routeConfiguration:
        vhost:
          name: "*:80"
          route:
            name: healthz`, `      listener:
        portNumber: 80`,
			`spec.configPatches[1].match: applyTo HTTP_ROUTE needs a routeConfiguration match, not a listener match`},
		{"unknown plugin on a route", "- {name: consumer-restriction, disabled: true}", "- {name: consumer-restrictio, disabled: true}",
			`plugins_config["moe"].config.value.plugins[1].name: invalid config of plugin "consumer-restrictio": field plugins[1].name: unknown plugin`},
		{"credential for a plugin not in the chain", `auth: {key-auth: {keys: ["bob-demo-key"]}}`, `auth: {jwt-auth: {claim_value: bob}}`,
			`spec.configPatches[0].patch.value.typed_config.plugin_config.value.consumers[1].auth.jwt-auth: invalid config of plugin "jwt-auth": field consumers[1].auth.jwt-auth: the plugin is not in this filter's plugin list`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(string(good), tc.old, tc.new, 1)
			if src == string(good) {
				t.Fatalf("%q not found", tc.old)
			}
			fr := validate.Bytes("in.yaml", []byte(src), validate.Options{}).Files[0]
			var got []string
			for _, f := range fr.Findings {
				got = append(got, f.String())
			}
			if fr.Errors() == 0 || !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Errorf("want\n%s\ngot\n%s", tc.want, strings.Join(got, "\n"))
			}
		})
	}
}
